"""An authored lecture (metadata.minitf.lecture): the format names what a deck needs (a title
on every slide, one notes cell with its class minutes per slide), and the slides preprocessor
lays the deck out as authored: nothing split, no "(cont.)", each slide under its title with
its section above it, an agenda in class minutes, answers one step after their question."""

import copy

import course_format as fmt
import minitf_slides
import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output


def _cell(cell, slide_type, roles=(), **minitf):
    cell.metadata["slideshow"] = {"slide_type": slide_type}
    fmt.set_roles(cell, roles)
    if minitf:
        cell.metadata["minitf"] = dict(minitf)
    return cell


def _notes(text, minutes=2):
    return _cell(new_markdown_cell(f"**Speaker notes.** {text}"), "notes", ["notes"],
                 minutes=minutes)


def lecture_notebook():
    printed = new_code_cell("print(2 * 3)")
    printed.outputs = [new_output("stream", name="stdout", text="6\n")]
    nb = new_notebook(cells=[
        _cell(new_markdown_cell("# 99 · A lecture\n\nWhat it builds. About 15 minutes."),
              "slide"),
        _notes("Open with the question.", 3),
        _cell(new_markdown_cell("## 1. Products\n\nWhy we multiply."), "slide",
              title="Multiplying scales every entry"),
        _notes("Ask for an example.", 5),
        _cell(new_markdown_cell("**Predict.** What does 2 × 3 print?"), "subslide",
              ["prediction"], title="Predict, then run: 2 × 3"),
        _cell(printed, "-", ["answer"]),
        _notes("Take three guesses first."),
        _cell(new_markdown_cell("A long aside only a learner reads."), "-", ["notebook-only"]),
        _cell(new_markdown_cell("## Summary\n\n* Products scale."), "slide",
              title="What to remember: a product scales"),
        _notes("Close."),
    ])
    nb.metadata["minitf"] = {"minutes": 15, "lecture": True}
    return nb


def _deck(nb, name="99_lecture"):
    pre = minitf_slides.SlidesPreprocessor()
    deck, _ = pre.preprocess(copy.deepcopy(nb), {"metadata": {"name": name, "path": "."}})
    return deck.cells


def test_a_well_authored_lecture_is_well_formed(tmp_path):
    nb = lecture_notebook()
    assert fmt.validate(nb, tmp_path / "99_lecture.ipynb") == []
    slides = fmt.lecture(nb)
    assert [s.start for s in slides] == [0, 2, 4, 8]
    assert [s.minutes(nb) for s in slides] == [3, 5, 2, 2]
    assert [s.section for s in slides] == ["", "1. Products", "1. Products", "Summary"]


def test_the_format_names_what_a_lecture_lacks(tmp_path):
    nb = lecture_notebook()
    del nb.cells[4].metadata["minitf"]            # a slide without a title
    del nb.cells[6]                               # ... and without its notes
    nb.cells[3].metadata["minitf"]["minutes"] = 0
    nb.cells[7].metadata["minitf"]["title"] = "Multiplying scales every entry"
    problems = fmt.validate(nb, tmp_path / "99_lecture.ipynb")
    cell = nb.cells[4].id
    assert f"99_lecture.ipynb cell 4 ({cell}): this cell starts a slide: give it a title that " \
           "states the slide's point (metadata.minitf.title)" in problems
    assert f"99_lecture.ipynb cell 4 ({cell}): a slide has one notes cell of its own, this " \
           "one has 0" in problems
    assert any("class minutes" in p and "not 0" in p for p in problems)
    assert any("two slides are titled 'Multiplying scales every entry'" in p for p in problems)


def test_the_deck_is_laid_out_as_authored():
    cells = _deck(lecture_notebook())
    text = [c.source for c in cells]
    shown = [c for c in cells if minitf_slides.shown(c)]
    # a title per slide, with its section above it in small type, and no "(cont.)"
    titles = [c.source for c in shown if "## " in c.source and "minitf-kicker" in c.source]
    assert [t.split("## ")[-1] for t in titles] == [
        "Multiplying scales every entry", "Predict, then run: 2 × 3",
        "What to remember: a product scales"]
    assert "1\\. Products" in titles[0] and "(cont.)" not in "".join(text)  # no list item
    # each slide's notes say its class minutes, after their label
    assert any(t.startswith("**Speaker notes.** *(5 min)* Ask for an example.") for t in text)
    # the cell's own section heading gives way to the title on the slide
    assert not any(s.startswith("## 1. Products") for s in text)
    # the agenda after the title slide, in class minutes, with notes of its own
    agenda = next(i for i, s in enumerate(text) if s.startswith("## The plan"))
    assert text[agenda].startswith("## The plan: 12 minutes")
    assert "- 1\\. Products · 7 min" in text[agenda] and "- Summary · 2 min" in text[agenda]
    assert minitf_slides.slide_type(cells[agenda + 1]) == "notes"
    # the answer comes one step after its question; the notebook-only cell is left out
    answer = next(c for c in cells if c.cell_type == "code")
    assert minitf_slides.slide_type(answer) == "fragment"
    skipped = next(c for c in cells if "only a learner reads" in c.source)
    assert minitf_slides.slide_type(skipped) == "skip"
    # one slide per slide-starting cell, plus the agenda
    starts = [c for c in shown if minitf_slides.starts_slide(c)]
    assert len(starts) == len(fmt.lecture(lecture_notebook())) + 1


def test_a_notebook_without_an_authored_lecture_is_cut_by_the_old_rules():
    nb = lecture_notebook()
    nb.metadata["minitf"]["lecture"] = False
    assert not any("minitf-kicker" in c.source for c in _deck(nb))
    assert nbformat.validate(nb) is None


def test_a_deck_that_opens_on_a_lecture_only_title_has_its_agenda_after_it():
    nb = lecture_notebook()
    nb.cells[0].metadata["tags"] = ["notebook-only"]
    title = _cell(new_markdown_cell("# 99 · A lecture, for the room"), "slide", ["lecture-only"])
    nb.cells.insert(1, title)
    cells = [c for c in _deck(nb) if minitf_slides.shown(c)]
    assert cells[0].source.startswith("# 99 · A lecture, for the room")
    assert cells[1].source.startswith("## The plan")


def test_an_exercise_left_out_of_the_deck_gets_no_task_card():
    nb = lecture_notebook()
    exercise = _cell(new_markdown_cell("### Exercise 1 — later"), "-", ["exercise"], minutes=5)
    stub = _cell(new_code_cell("def f(x):\n    raise NotImplementedError\n\n\ncheck_f(f)"), "-",
                 ["stub", "checker"])
    for cell in (exercise, stub):
        cell.metadata["tags"].append("notebook-only")
    nb.cells[4:4] = [exercise, stub]
    assert not any("In JupyterLab" in c.source for c in _deck(nb))
    exercise.metadata["tags"].remove("notebook-only")
    assert sum("In JupyterLab" in c.source for c in _deck(nb)) == 1
