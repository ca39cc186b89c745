"""What the checkers say, in the course's two languages (issue 35).

Every sentence a checker shows a learner is a pair {"en": ..., "zh": ...}: the engine's words
live in MESSAGES below, keyed by an id; each exercise's name, task, case notes and hints live
beside the exercise, in its notebook's module (a hint next to the function that makes its
mistake). `{field}`s are filled in with str.format.

The language is the edition's: the notebooks' setup cell calls
`minitf.check.use_language("zh")` in the Chinese edition, and English is the default, so a
learner never sets it. The switch (`use_language`, `current_language`, `pick`, `spaced`) lives
in minitf.language, because the figures speak the same language (their words are in
minitf/figures/labels.py). A checker speaks the language that was current when it ran, and
its result keeps that language.

The Chinese is written for a Chinese learner, in the course's terms (notebooks/zh/00's glossary,
translations/zh/README.md): 检查函数, 练习, 用例, 形状, 广播, 掩码, 词元, 编号, 头, 束搜索 ...
Code, names and numbers stay as they are.
"""

from ..language import LANGUAGES, current_language, pick, spaced, use_language

__all__ = ["LANGUAGES", "MESSAGES", "current_language", "pick", "say", "spaced", "use_language"]


def say(key, language=None, **fields):
    """MESSAGES[key] in `language` (default: the current one), with its fields filled in
    (in Chinese, a space between a Chinese character and a Latin letter or digit that meet)."""
    language = language or current_language()
    text = MESSAGES[key][language].format(**fields)
    return spaced(text) if language == "zh" and fields else text


MESSAGES = {
    # -- the verdict --------------------------------------------------------------------
    "pass": {"en": "✓ {name}: pass", "zh": "✓ {name}：通过"},
    "agree.one": {"en": "1 case agrees with minitf", "zh": "1 个测试用例与 minitf 一致"},
    "agree.many": {"en": "{total} cases agree with minitf",
                   "zh": "全部 {total} 个测试用例都与 minitf 一致"},
    "not yet": {"en": "✗ {name}: not yet", "zh": "✗ {name}：还没通过"},
    "cases differ": {"en": " — {failed} of {total} cases differ",
                     "zh": " —— {total} 个测试用例中有 {failed} 个不一致"},
    "not written": {"en": "not written yet: replace `raise NotImplementedError` with your code",
                    "zh": "还没有写：把 `raise NotImplementedError` 换成你的代码"},
    "asked": {"en": "asked: {call} should return {task}", "zh": "要求：{call} 应当返回{task}"},
    "case": {"en": "case {number}: {inputs}", "zh": "用例 {number}：{inputs}"},
    "case note": {"en": "{inputs} — {note}", "zh": "{inputs} —— {note}"},
    "hint": {"en": "hint: {hint}", "zh": "提示：{hint}"},
    "differ too.one": {"en": "(case {numbers} differs too)", "zh": "（用例 {numbers} 也不一致）"},
    "differ too.many": {"en": "(cases {numbers} differ too)", "zh": "（用例 {numbers} 也不一致）"},
    "list": {"en": ", ", "zh": "、"},

    # -- what went wrong beyond one case -----------------------------------------------
    "not a function": {
        "en": "{checker} needs your function itself, but got {shown} (a {type}): pass the "
              "function without calling it, e.g. {checker}(my_function)",
        "zh": "{checker} 需要的是你的函数本身，收到的却是 {shown}（一个 {type}）：传入函数时"
              "不要调用它，例如 {checker}(my_function)"},
    "too slow": {
        "en": "{fn} took longer than {seconds} s on case {number} ({case}) and was stopped: "
              "does a loop never end?",
        "zh": "{fn} 在用例 {number}（{case}）上运行超过 {seconds} 秒，已被停止：是不是有一个"
              "循环永远不会结束？"},
    "too slow.yours": {
        "en": "{fn} (or the reference) took longer than {seconds} s on case {number} ({case}) "
              "and was stopped: does a loop never end?",
        "zh": "{fn}（或参考函数）在用例 {number}（{case}）上运行超过 {seconds} 秒，已被停止："
              "是不是有一个循环永远不会结束？"},
    "reference failed": {
        "en": "your reference {raised} on case {number} ({case}); your function was not "
              "judged: fix the reference or the case",
        "zh": "你的参考函数在用例 {number}（{case}）上{raised}；你的函数没有被评判：请修正参考"
              "函数或用例"},
    "internal error": {
        "en": "the checker itself failed ({error}); your function was not judged — please "
              "report this",
        "zh": "检查函数自身出错了（{error}）；你的函数没有被评判 —— 请报告这个问题"},

    # -- check_function's own arguments ---------------------------------------------
    "check_function": {"en": "check_function: {problem}", "zh": "check_function：{problem}"},
    "reference task": {"en": "what the reference returns", "zh": "与参考函数相同的结果"},
    "cases example": {"en": "e.g. [(x1,), (x2,)] for a function of one argument",
                      "zh": "例如单参数函数用 [(x1,), (x2,)]"},
    "cases not tuples": {"en": "cases must be a list of argument tuples, {example}; got {kind}",
                         "zh": "cases 必须是由参数元组组成的列表，{example}；收到的是{kind}"},
    "cases too slow": {"en": "making the cases took longer than {seconds} s",
                       "zh": "生成用例花了超过 {seconds} 秒"},
    "cases raised": {"en": "making the cases {raised}", "zh": "生成用例时{raised}"},
    "cases endless": {
        "en": "cases has more than {most} tuples (an endless generator?): give at most {most}",
        "zh": "cases 超过了 {most} 个元组（是不是一个无穷的生成器？）：最多给 {most} 个"},
    "cases empty": {"en": "cases is empty: give at least one tuple of arguments, {example}",
                    "zh": "cases 是空的：至少给一个参数元组，{example}"},
    "case not a tuple": {"en": "cases[{i}] is {kind}, not a tuple of arguments; {example}",
                         "zh": "cases[{i}] 是{kind}，不是参数元组；{example}"},
    "reference not a function": {"en": "reference must be a function, got {kind}",
                                 "zh": "reference 必须是一个函数，收到的是{kind}"},

    # -- what a call raised ---------------------------------------------------------
    "raised": {"en": "raised {kind}", "zh": "引发了 {kind}"},
    "raised in": {"en": "raised {kind} in {where}", "zh": "在 {where} 中引发了 {kind}"},
    "raised message": {"en": "{raised}: {message}", "zh": "{raised}：{message}"},
    "written yet": {"en": "{name}() — is it written yet?", "zh": "{name}()（它写好了吗？）"},

    # -- what differs -------------------------------------------------------------
    "cannot read": {"en": "returned something the checker cannot read ({error})",
                    "zh": "返回了检查函数读不懂的东西（{error}）"},
    "differs": {"en": "differs", "zh": "不一致"},
    "no return": {"en": "returned None — did you forget `return`?",
                  "zh": "返回了 None —— 是不是忘了写 `return`？"},
    "expected tuple": {"en": "returned {kind}, expected the tuple ({labels})",
                       "zh": "返回的是{kind}，应当是元组 ({labels})"},
    "item": {"en": "item {i}", "zh": "第 {i} 项"},
    "labelled": {"en": "{label}: {problem}", "zh": "{label}：{problem}"},
    "expected numbers": {"en": "returned {kind}, expected numbers",
                         "zh": "返回的是{kind}，应当是数值"},
    "expected one array": {"en": "returned a {type} of {n} arrays, expected one array",
                           "zh": "返回的是由 {n} 个数组组成的 {type}，应当只返回一个数组"},
    "not numbers": {"en": "returned {kind}, which is not an array of numbers",
                    "zh": "返回的是{kind}，它不是数值数组"},
    "expected a number": {"en": "returned shape {shape}, expected a single number",
                          "zh": "返回的形状是 {shape}，应当是单个数"},
    "shape": {"en": "shape {shape}, expected {expected}",
              "zh": "形状是 {shape}，应当是 {expected}"},
    "right values, dtype": {"en": "the right values, but dtype {dtype}, expected {want}",
                            "zh": "数值是对的，但 dtype 是 {dtype}，应当是{want}"},
    "dtype": {"en": "dtype {dtype}, expected {want}", "zh": "dtype 是 {dtype}，应当是{want}"},
    "want bool": {"en": "bool", "zh": "bool"},
    "want integers": {"en": "integers", "zh": "整数"},
    "booleans": {"en": "returned booleans (dtype bool), expected {dtype} numbers",
                 "zh": "返回的是布尔值（dtype bool），应当是 {dtype} 数值"},
    "entries differ": {"en": "{wrong} of {size} entries differ; first at {at}: {detail}",
                       "zh": "{size} 个元素中有 {wrong} 个不一致；第一个在 {at}：{detail}"},
    "got": {"en": "got {got}, expected {expected}", "zh": "得到 {got}，应为 {expected}"},
    "off by": {"en": " (off by {gap})", "zh": "（相差 {gap}）"},
    "off by, tolerance": {"en": " (off by {gap}, tolerance {tolerance})",
                          "zh": "（相差 {gap}，容差 {tolerance}）"},

    # -- notebook 07: the step function of beam search, n-best lists, the KV cache ------
    "step.one prefix": {
        "en": "step takes one prefix, a 1-D sequence of ids, got {type} of shape {shape} "
              "({dtype})",
        "zh": "step 接收一个前缀，即一维的编号序列，收到的却是形状为 {shape} 的 {type}"
              "（{dtype}）"},
    "step.bos": {"en": "a prefix starts with <bos> (id {bos}), got {ids}",
                 "zh": "前缀要以 <bos>（编号 {bos}）开头，收到的是 {ids}"},
    "step.range": {"en": "ids must be in 0..{last}, got {ids}",
                   "zh": "编号必须在 0..{last} 之内，收到的是 {ids}"},
    "beam.not a list": {"en": "returned {kind}; return a list of (tokens, score) pairs",
                        "zh": "返回的是{kind}；应当返回由 (tokens, score) 对组成的列表"},
    "beam.ids only": {"en": "item {i} is a list of ids; each item is a pair (tokens, score)",
                      "zh": "第 {i} 项是一串编号；每一项应当是一对 (tokens, score)"},
    "beam.not a pair": {"en": "item {i} is {kind}; each item is a pair (tokens, score)",
                        "zh": "第 {i} 项是{kind}；每一项应当是一对 (tokens, score)"},
    "beam.tokens": {"en": "item {i}: the tokens are {kind}, expected a 1-D list of ids",
                    "zh": "第 {i} 项：tokens 是{kind}，应当是一维的编号列表"},
    "beam.score": {"en": "item {i}: the score is {kind}, expected a number",
                   "zh": "第 {i} 项：score 是{kind}，应当是一个数"},
    "beam.hypothesis": {"en": "{tokens} (score {score})", "zh": "{tokens}（分数 {score}）"},
    "beam.or": {"en": " or ", "zh": " 或 "},
    "beam.missing": {"en": "returned {got} hypotheses, expected {expected}; missing {hyp}",
                     "zh": "返回了 {got} 个假设，应当是 {expected} 个；缺少 {hyp}"},
    "beam.wrong": {"en": "hypothesis {n} (best first) is {hyp}; expected {expected}",
                   "zh": "第 {n} 个假设（从最好的算起）是 {hyp}；应当是 {expected}"},
    "beam.score differs": {"en": "hypothesis {n}, tokens {tokens}: score {got}, expected "
                                 "{expected}{off}",
                           "zh": "第 {n} 个假设，tokens {tokens}：分数 {got}，应为 "
                                 "{expected}{off}"},
    "beam.twice": {"en": "{hyp} appears twice", "zh": "{hyp} 出现了两次"},
    "beam.too many": {"en": "returned {got} hypotheses, expected {expected}: {hyp} is one too "
                            "many",
                      "zh": "返回了 {got} 个假设，应当是 {expected} 个：{hyp} 是多出来的"},
    "kv.step": {"en": "step {step} ({t} positions cached before it)",
                "zh": "第 {step} 步（此前已缓存 {t} 个位置）"},
    "kv.step.one": {"en": "step {step} (1 position cached before it)",
                    "zh": "第 {step} 步（此前已缓存 1 个位置）"},
    "kv.not a pair": {"en": "returned {kind}; return the pair (z_t, cache)",
                      "zh": "返回的是{kind}；应当返回 (z_t, cache) 这一对"},
    "kv.not a dict": {"en": "the cache returned is {kind}, expected a dict with 'k' and 'v'",
                      "zh": "返回的缓存是{kind}，应当是含 'k' 和 'v' 的 dict"},
    "kv.not arrays": {"en": "returned something that is not arrays ({error})",
                      "zh": "返回的东西不是数组（{error}）"},
    "kv.at step": {"en": "{step}: {problem}", "zh": "{step}：{problem}"},
    "kv.grows": {"en": "{step}: {label} has shape {shape}, expected {expected} (one more "
                       "position per step)",
                 "zh": "{step}：{label} 的形状是 {shape}，应当是 {expected}（每一步多一个位置）"},
    "kv.axes": {"en": "{step}: {label} has shape {shape}, expected {expected} (the positions "
                      "go on axis -2: (..., t, d))",
                "zh": "{step}：{label} 的形状是 {shape}，应当是 {expected}（位置放在 axis -2 上："
                      "(..., t, d)）"},

    # -- kinds of values ----------------------------------------------------------
    "kind.array": {"en": "an array of shape {shape}", "zh": "形状为 {shape} 的数组"},
    "kind.sequence": {"en": "a {type} of {n}", "zh": "含 {n} 项的 {type}"},
    "kind.number": {"en": "the number {value}", "zh": "数值 {value}"},
    "kind.string": {"en": "the string {value}", "zh": "字符串 {value}"},
    "kind.other": {"en": "{article} {type}", "zh": "一个 {type}"},
    "value.function": {"en": "{name}: a function", "zh": "{name}：一个函数"},
    "value.dict": {"en": "{name}: dict of {keys}", "zh": "{name}：含 {keys} 的 dict"},
    "value.kind": {"en": "{name}: {kind}", "zh": "{name}：{kind}"},
}
