"""The words the figures draw, in the course's two languages (issue 35).

Every label a figure of minitf.figures draws by itself (a box's name, a note, a title, a plot
helper's default axis label) is a pair {"en": ..., "zh": ...} in LABELS below, keyed by a short
name; `label(key, **fields)` gives it in the current language (`minitf.language`, which every
notebook's setup cell sets with use_language), its `{field}`s filled in with str.format. What a
caller passes (a title, ``xlabel=...``) is drawn as given; only the defaults follow the language.

The English is what the English notebooks show, unchanged: several English labels carry their
Chinese term too (``"Feed Forward\\n前馈网络"``), for an English reader who meets the Chinese
edition. The Chinese is written for a Chinese reader, in the course's terms
(translations/zh/glossary.tsv), and as short as the English, to fit the same boxes. What the
figure shows as data stays as it is: the task's tokens (``one thousand five <eos>``, 一 千),
the notes' sentence, code names (``split_heads``), formulas. Mathtext (``$…$``) has no Chinese
glyphs, so a Chinese label keeps its formula on a line of its own, or writes it in Unicode
(``dₖ``). In Chinese, a space where a Chinese character meets a Latin letter or a digit, and
full-width punctuation (translations/zh/README.md). Every Chinese character here must be in the
shipped font (tests/tools/test_slides.py checks it). No notebook calls these: the figures do.
"""

from ..language import current_language, pick, spaced

__all__ = ["LABELS", "label"]


def label(key, **fields):
    """LABELS[key] in the current language (`use_language`), its {fields} filled in; in
    Chinese, a space where a filled-in field meets a Chinese character (as the checkers'
    messages do). No notebook calls it: the figures do."""
    text = pick(LABELS[key])
    if not fields:
        return text
    text = text.format(**fields)
    return spaced(text) if current_language() == "zh" else text


LABELS = {
    # -- words several diagrams share ---------------------------------------------------
    "multi-head attention": {"en": "Multi-Head Attention\n多头注意力", "zh": "多头注意力"},
    "feed forward": {"en": "Feed Forward\n前馈网络", "zh": "前馈网络"},
    "feed forward, one line": {"en": "Feed Forward 前馈网络", "zh": "前馈网络"},
    "add & norm": {"en": "Add & Norm", "zh": "Add & Norm"},  # the Chinese text says it so
    "add & norm, two lines": {"en": "Add &\nNorm", "zh": "Add &\nNorm"},
    "layer norm": {"en": "LayerNorm\n层归一化", "zh": "层归一化"},
    "+ positional encoding": {"en": "+ positional encoding 位置编码", "zh": "+ 位置编码"},
    "head": {"en": "head {i}", "zh": "头 {i}"},
    "output": {"en": "output", "zh": "输出"},
    "concat": {"en": "concat 拼接", "zh": "拼接"},

    # -- transformer() ------------------------------------------------------------------
    "transformer.inputs": {"en": "Inputs: one thousand five <eos>",
                           "zh": "输入：one thousand five <eos>"},
    "transformer.outputs": {"en": "Outputs, shifted right: <bos> 一 千 零 五",
                            "zh": "输出（右移一位）：<bos> 一 千 零 五"},
    "transformer.embedding": {"en": "Embedding $\\times\\sqrt{d_{\\mathrm{model}}}$\n嵌入",
                              "zh": "嵌入  × √d_model"},
    "transformer.positional": {"en": "Positional\nencoding 位置编码", "zh": "位置编码"},
    "transformer.masked attention": {"en": "Masked Multi-Head Attention\n掩码自注意力",
                                     "zh": "掩码多头自注意力"},
    "transformer.cross attention": {"en": "Multi-Head Cross-Attention\n交叉注意力",
                                    "zh": "多头交叉注意力"},
    "transformer.encoder": {"en": "Encoder\n编码器", "zh": "编码器"},
    "transformer.decoder": {"en": "Decoder\n解码器", "zh": "解码器"},
    "transformer.memory": {"en": "memory, read by\nevery decoder layer",
                           "zh": "记忆：每个解码器层\n都读取它"},
    "transformer.linear": {"en": "Linear", "zh": "线性层"},
    "transformer.softmax": {"en": "Softmax", "zh": "Softmax"},
    "transformer.probabilities": {"en": "Output probabilities\n→ 一 千 零 五 <eos>",
                                  "zh": "输出概率\n→ 一 千 零 五 <eos>"},

    # -- attention_flow() ---------------------------------------------------------------
    "attention_flow.title": {"en": "Self-attention 自注意力, matrix form",
                             "zh": "矩阵形式的自注意力"},
    "attention_flow.scores": {"en": "scores", "zh": "注意力分数"},
    "attention_flow.mask": {"en": "mask\n(optional)", "zh": "掩码\n（可选）"},
    "attention_flow.mask note": {"en": "−∞ where\nnot allowed", "zh": "不可关注处\n设为 −∞"},
    "attention_flow.softmax": {"en": "softmax\nper row", "zh": "softmax\n逐行计算"},
    "attention_flow.weights": {"en": "weights", "zh": "权重"},

    # -- multi_head() -------------------------------------------------------------------
    "multi_head.title": {"en": "Multi-head attention 多头注意力", "zh": "多头注意力"},
    "multi_head.each": {"en": "each $d_{\\mathrm{model}} \\times d_{\\mathrm{model}}$",
                        "zh": "每个都是\n$d_{\\mathrm{model}} \\times d_{\\mathrm{model}}$"},
    "multi_head.blocks": {"en": "4 blocks of", "zh": "分成 4 块，每块"},
    "multi_head.split": {"en": "split into\nh = 4 heads", "zh": "拆分成 h = 4 个头"},
    "multi_head.attention": {"en": "attention", "zh": "注意力"},

    # -- encoder_layer() ----------------------------------------------------------------
    "encoder_layer.title": {"en": "Encoder layer 编码器层 · {kind}", "zh": "编码器层 · {kind}"},
    "encoder_layer.post-LN": {"en": "post-LN, as in the paper",
                              "zh": "后置层归一化（post-LN），与论文相同"},
    "encoder_layer.pre-LN": {"en": "pre-LN: norm first",
                             "zh": "前置层归一化（pre-LN）：先归一化"},
    "encoder_layer.residual": {"en": "residual connection 残差连接", "zh": "残差连接"},
    "encoder_layer.final norm": {"en": "once, after\nthe N layers", "zh": "N 层之后\n只做一次"},

    # -- decoder_layer() ----------------------------------------------------------------
    "decoder_layer.title": {"en": "Decoder layer 解码器层 · post-LN · every attention is "
                                  "multi-head",
                            "zh": "解码器层 · 后置层归一化（post-LN）· 每个注意力都是多头的"},
    "decoder_layer.masked attention": {"en": "Masked Self-Attention\n掩码自注意力",
                                       "zh": "掩码自注意力"},
    "decoder_layer.cross attention": {"en": "Cross-Attention\n交叉注意力", "zh": "交叉注意力"},
    "decoder_layer.causal mask": {"en": "causal mask\n因果掩码", "zh": "因果掩码"},
    "decoder_layer.memory": {"en": "encoder memory\n编码器输出", "zh": "编码器的输出\n（记忆）"},

    # -- generation_loop() --------------------------------------------------------------
    "generation_loop.encoder": {"en": "Encoder 编码器\n(runs once)",
                                "zh": "编码器\n（只运行一次）"},
    "generation_loop.memory": {"en": "memory", "zh": "记忆"},
    "generation_loop.so far": {"en": "tokens so far", "zh": "目前已有的词元"},
    "generation_loop.next": {"en": "most likely\nnext token", "zh": "最可能的\n下一个词元"},
    "generation_loop.step": {"en": "step {n}", "zh": "第 {n} 步"},
    "generation_loop.decoder": {"en": "Decoder 解码器\n→ Linear → softmax",
                                "zh": "解码器\n→ 线性层 → softmax"},
    "generation_loop.stop": {"en": "stop: 一千零五", "zh": "停止：一千零五"},

    # -- referent_model() ---------------------------------------------------------------
    "referent_model.words": {"en": "words 词", "zh": "词"},
    "referent_model.title": {"en": "ReferentModel: an encoder and a pointer head, no decoder",
                             "zh": "ReferentModel：一个编码器加一个指针头，没有解码器"},
    "referent_model.embedding": {"en": "Embedding 嵌入\n$\\times\\sqrt{d_{\\mathrm{model}}}$",
                                 "zh": "嵌入\n$\\times\\sqrt{d_{\\mathrm{model}}}$"},
    "referent_model.encoder": {"en": "Encoder 编码器\nself-attention + feed-forward, each "
                                     "with Add & Norm (notebook 05)",
                               "zh": "编码器\n自注意力 + 前馈网络，每个子层之后都相加并归一化"
                                     "（笔记本 05）"},
    "referent_model.vectors": {"en": "vectors", "zh": "向量"},
    "referent_model.pointer": {
        "en": "Pointer head 指针\n"
              "$q = h_{\\mathrm{it}}\\,W^Q$ from “it”,   $k_j = h_j\\,W^K$ from every word\n"
              "$p_j = \\mathrm{softmax}_j\\,(q \\cdot k_j\\,/\\sqrt{d_k})$ over the positions",
        "zh": "指针头：查询来自“it”，键来自每个词，对所有位置做 softmax\n"
              "$q = h_{\\mathrm{it}}\\,W^Q$,   $k_j = h_j\\,W^K$\n"
              "$p_j = \\mathrm{softmax}_j\\,(q \\cdot k_j\\,/\\sqrt{d_k})$"},
    "referent_model.p": {"en": "p over the words, after training:\n"
                               "“it” = the animal (“… too tired”)",
                         "zh": "训练后各个词上的 p：\n“it” = the animal（“… too tired”）"},

    # -- single_query() -----------------------------------------------------------------
    "single_query.title": {"en": "One query against its keys 单个查询的注意力 · "
                                 "The Illustrated Transformer's example",
                           "zh": "单个查询的注意力 · 《图解 Transformer》中的算例"},
    "single_query.scores": {"en": "1 · scores 注意力分数", "zh": "1 · 注意力分数"},
    "single_query.divide": {"en": "2 · divide by $\\sqrt{d_k} = 8$", "zh": "2 · 除以 √dₖ = 8"},
    "single_query.weights": {"en": "3 · softmax → weights 权重", "zh": "3 · softmax → 权重"},
    "single_query.sum": {"en": "4 · weighted sum 加权平均", "zh": "4 · 加权平均"},
    "single_query.query": {"en": "query 查询", "zh": "查询"},
    "single_query.key of": {"en": "key of “{word}”", "zh": "“{word}”的键"},
    # between two formulas on one line, which mathtext sets: no Chinese there
    "single_query.so": {"en": ", so ", "zh": " ⇒ "},

    # -- head_split() -------------------------------------------------------------------
    "head_split.title": {"en": "Splitting into heads 拆分多头", "zh": "拆分多头"},
    "head_split.columns": {"en": "head $i$: columns $i\\,d_k : (i+1)\\,d_k$",
                           "zh": "头 i：第 i·dₖ 到 (i+1)·dₖ 列"},
    "head_split.heads": {"en": "$h = {h}$ heads, each $L \\times d_k$",
                         "zh": "h = {h} 个头，每个 L × dₖ"},
    "head_split.one head": {"en": "$h = 1$ head, $L \\times d_k$", "zh": "h = 1 个头，L × dₖ"},
    "head_split.reshape": {"en": "reshape, transpose", "zh": "变形，再转置"},
    "head_split.attention": {"en": "attention, every head on its own 每个头独立计算",
                             "zh": "注意力：每个头独立计算"},
    "head_split.as it came in": {"en": "$(B, L, d_{\\mathrm{model}})$, as it came in",
                                 "zh": "$(B, L, d_{\\mathrm{model}})$\n与输入相同"},
    "head_split.kv": {"en": "K and V are split the same way", "zh": "K 和 V 也这样拆分"},

    # -- cross_attention() --------------------------------------------------------------
    "cross_attention.title": {"en": "Cross-attention 交叉注意力: a rectangle, not a square",
                              "zh": "交叉注意力：权重是长方形，不是正方形"},
    "cross_attention.memory": {"en": "keys K, values V 键、值: the encoder memory 编码器输出",
                               "zh": "键 K、值 V：来自编码器的输出（记忆）"},
    "cross_attention.queries": {"en": "queries Q 查询:\nthe decoder 解码器",
                                "zh": "查询 Q：\n来自解码器"},
    "cross_attention.inputs": {"en": "$Q$: $L_t \\times d_k$ from the decoder;   $K$, $V$: "
                                     "$L_s \\times d_k$ from the memory",
                               "zh": "Q：Lₜ × dₖ，来自解码器；  K、V：Lₛ × dₖ，来自记忆"},
    "cross_attention.note": {"en": "one row per target position, each row sums to 1;\n"
                                   "nothing masked: every position reads the whole source",
                             "zh": "目标序列的每个位置一行，每行之和为 1；\n"
                                   "没有掩码：每个位置都能读到整个源句子"},
    "cross_attention.contrast": {"en": "for contrast: masked self-attention\n掩码自注意力",
                                 "zh": "作为对照：\n掩码自注意力"},
    "cross_attention.square": {"en": "a square; grey: masked,\na position sees itself and\n"
                                     "the positions before it",
                               "zh": "正方形；灰色：被掩码，\n每个位置只看到自己\n和它之前的位置"},

    # -- beam_tree() --------------------------------------------------------------------
    "beam_tree.title": {"en": "Beam search 束搜索, beam size K = {k}, on notebook 07's toy "
                              "model for “twelve”",
                        "zh": "束搜索，束宽 K = {k}：笔记本 07 中为“twelve”虚构的模型"},
    "beam_tree.start": {"en": "start", "zh": "开始"},
    "beam_tree.step": {"en": "step {step}\nkeep {room}", "zh": "第 {step} 步\n保留 {room} 个"},
    "beam_tree.kept": {"en": "in the beam 保留", "zh": "留在束中"},
    "beam_tree.finished": {"en": "finished: ends in <eos> 完成", "zh": "完成：以 <eos> 结尾"},
    "beam_tree.pruned": {"en": "pruned 剪枝", "zh": "剪枝"},
    "beam_tree.legend": {"en": "arrows: log p of the token\nboxes: the token, Σ log p so far",
                         "zh": "箭头：这个词元的 log p\n方框：词元，及到此为止的 Σ log p"},
    "beam_tree.ranked": {"en": "finished answers, ranked by log p ÷ lp(n):",
                         "zh": "完成的答案，按 log p ÷ lp(n) 排序："},
    "beam_tree.answer": {"en": "{rank}. {answer} (n = {n}):  {logp} ÷ {lp} = {score}",
                         "zh": "{rank}. {answer}（n = {n}）：{logp} ÷ {lp} = {score}"},
    "beam_tree.empty": {"en": "(empty)", "zh": "（空）"},
    "beam_tree.greedy": {"en": "K = 1 is greedy decoding", "zh": "K = 1 就是贪心解码"},
    "beam_tree.greedy keeps": {"en": "greedy (K = 1) keeps only 一 and ends at 一十二",
                               "zh": "贪心解码（K = 1）只保留“一”，得到“一十二”"},

    # -- kv_cache() ---------------------------------------------------------------------
    "kv_cache.title": {"en": "KV cache 键值缓存: each step appends one row to K and V",
                       "zh": "KV 缓存：每一步给 K 和 V 各添加一行"},
    "kv_cache.new token": {"en": "new token", "zh": "新词元"},
    "kv_cache.rows per step": {"en": "rows computed per step 每步计算的行数:",
                               "zh": "每步计算的行数："},
    "kv_cache.with cache": {"en": "with cache 有缓存", "zh": "有缓存"},
    "kv_cache.without": {"en": "without 不用缓存", "zh": "不用缓存"},
    "kv_cache.step": {"en": "step {t}: feed {token}", "zh": "第 {t} 步：输入 {token}"},
    "kv_cache.one row": {"en": "1 row", "zh": "1 行"},
    "kv_cache.rows": {"en": "{n} rows", "zh": "{n} 行"},
    "kv_cache.computed": {"en": "computed at this step", "zh": "这一步新算的"},
    "kv_cache.cached": {"en": "read from the cache 缓存", "zh": "从缓存中读取"},
    "kv_cache.weights": {"en": "the weights α, one per row of K", "zh": "权重 α：K 的每一行一个"},
    "kv_cache.note": {"en": "The same numbers as recomputing: the past does not change. "
                            "Cross-attention's K, V (the memory): computed once.",
                      "zh": "结果与重新计算完全相同：过去的行不会改变。交叉注意力的 K、V"
                            "（记忆）只算一次。"},

    # -- decoder_only() -----------------------------------------------------------------
    "decoder_only.title": {"en": "GPT-style: one stack of masked self-attention blocks over one "
                                 "sequence, no encoder",
                           "zh": "GPT 式模型：在一个序列上堆叠掩码自注意力块，没有编码器"},
    "decoder_only.sequence": {"en": "one sequence\n一个序列", "zh": "一个序列"},
    "decoder_only.embedding": {"en": "Embedding 嵌入  × √d_model", "zh": "嵌入  × √d_model"},
    "decoder_only.masked attention": {"en": "Masked Self-Attention 掩码自注意力",
                                      "zh": "掩码自注意力"},
    "decoder_only.causal mask": {"en": "causal\nmask", "zh": "因果\n掩码"},
    "decoder_only.no cross": {"en": "no cross-\nattention:\nno encoder",
                              "zh": "没有交叉\n注意力：\n没有编码器"},
    "decoder_only.generator": {"en": "Linear → softmax: the next token",
                               "zh": "线性层 → softmax：下一个词元"},
    "decoder_only.next": {"en": "next token\n下一个词元", "zh": "下一个词元"},
    "decoder_only.prompt": {"en": "prompt: not scored", "zh": "提示词：不计入损失"},
    "decoder_only.answer": {"en": "answer: scored by the loss", "zh": "答案：计入损失"},

    # -- the plot helpers (viz): default axis labels, legends and panel titles -----------
    "key": {"en": "key", "zh": "键"},
    "query": {"en": "query", "zh": "查询"},
    "layer": {"en": "layer", "zh": "层"},
    "layer head": {"en": "layer {layer} head {head}", "zh": "第 {layer} 层 · 头 {head}"},
    # token_bars: the distribution before a filter and after it (notebook 07 §4)
    "before": {"en": "before", "zh": "过滤前"},
    "after": {"en": "after", "zh": "过滤后"},
    "probability": {"en": "probability", "zh": "概率"},
    "generated position": {"en": "position of the generated token", "zh": "生成的词元的位置"},
    "ms per token": {"en": "ms for this token", "zh": "这个词元的用时（毫秒）"},
    "time (ms)": {"en": "time (ms)", "zh": "时间（毫秒）"},
    "peak memory (MiB)": {"en": "peak memory (MiB)", "zh": "峰值内存（MiB）"},
    "measured": {"en": "measured", "zh": "实测"},
    "sequence length n": {"en": "sequence length n", "zh": "序列长度 n"},
    "cost.time": {"en": "{title}: time", "zh": "{title}：时间"},
    "cost.memory": {"en": "memory", "zh": "内存"},
}
