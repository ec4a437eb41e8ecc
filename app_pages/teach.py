"""The teacher's page (``/teach?key=K``): the class's predictions, live, behind the room's key.

With the key (``RFVIZ_TEACHER_KEY``, compared in constant time by rfviz.server.room.key_matches): where the class is,
how many have answered the step the teacher watches (``st.metric`` "answered") and the spread of their predictions,
redrawn every second by a fragment (``st.fragment(run_every=…)``) from the room store (``RFVIZ_CLASSROOM_DB``,
shared by every app process of the room), and two buttons: move the class to a step (the students' Learn pages
follow within a few seconds) and reveal its answer to everyone. Without the key, or with a wrong one, the page
shows one sentence and nothing of the class. Not in the students' navigation (a hidden page of app.py).
"""

from __future__ import annotations

import os

import streamlit as st

from app_pages import _ui as ui
from rfviz.figures.learn import predictions_figure
from rfviz.lessons import LESSONS
from rfviz.server.room import ENV_DB, ENV_KEY, TEACHER_REFRESH_SECONDS, Room, key_matches

# (no bare strings at this level: Streamlit's "magic" would write them on the page)
NEEDS_KEY = ("This page is the teacher's: it needs the teacher's link (…/teach?key=…) that `./run classroom` or "
             "`./run app` printed when it started.")


@st.cache_resource(show_spinner=False)
def _room(path: str) -> Room:
    """One Room object (its per-thread connections) per server process and file."""
    return Room(path)


def room() -> Room | None:
    """The room of this server (``RFVIZ_CLASSROOM_DB``), None when the app runs without one."""
    path = os.environ.get(ENV_DB)
    return _room(path) if path else None


def _pick_step(r: Room) -> tuple[str, int]:
    """The lesson and step the teacher watches: chosen in the sidebar, starting at the link's ``lesson`` and
    ``step`` when it names one (``/teach?key=K&lesson=hybrids&step=1``), else where the class is."""
    slugs = list(LESSONS)
    if "teach.lesson" not in st.session_state:
        asked, now = st.query_params.get("lesson"), r.state()
        lesson, step = (asked, st.query_params.get("step", "1")) if asked in LESSONS else (now.lesson, now.step)
        st.session_state["teach.lesson"] = lesson if lesson in LESSONS else slugs[0]
        st.session_state["teach.step"] = int(step) if str(step).isdigit() and len(str(step)) <= 2 else 1
    slug = st.sidebar.selectbox("Lesson", slugs, key="teach.lesson",
                                format_func=lambda s: f"{slugs.index(s) + 1} · {LESSONS[s].title} ({s})")
    count = len(LESSONS[slug].steps)
    if not 1 <= st.session_state["teach.step"] <= count:
        st.session_state["teach.step"] = 1
    step = st.sidebar.selectbox("Step", list(range(1, count + 1)), key="teach.step", disabled=count == 1)
    return slug, int(step)


@st.fragment(run_every=TEACHER_REFRESH_SECONDS)
def live(r: Room, slug: str, step_no: int) -> None:
    """Where the class is, how many answered step ``step_no`` of ``slug``, and the spread of their predictions."""
    now = r.state()
    if now.lesson in LESSONS:
        where = f"lesson {list(LESSONS).index(now.lesson) + 1} · {LESSONS[now.lesson].title}, step {now.step}"
        st.markdown(f"**The class is on** {where}" + (" · answer revealed" if now.revealed else ""))
    else:
        st.markdown("**The class is** where each student chose: no step opened yet.")
    step = LESSONS[slug].steps[step_no - 1]
    counts = r.counts(slug, step_no, len(step.choices))
    st.metric("answered", sum(counts))
    ui.plot(predictions_figure(step.choices, counts, step.answer, f"predictions · {step.title}"),
            key="teach-predictions")


def main() -> None:
    """The page: one sentence without the key, the class with it."""
    st.title("The class's predictions")
    r = room()
    if r is None or not key_matches(st.query_params.get("key"), os.environ.get(ENV_KEY)):
        st.info(NEEDS_KEY, icon=":material/key:")
        return
    slug, step_no = _pick_step(r)
    step = LESSONS[slug].steps[step_no - 1]
    st.subheader(f"{list(LESSONS).index(slug) + 1} · {LESSONS[slug].title}, step {step_no}: {step.title}")
    st.markdown(step.question)
    left, right = st.columns(2)
    left.button("Move the class here", icon=":material/group:", key="teach.open", width="stretch",
                on_click=lambda: r.open_step(slug, step_no),
                help="every student's Learn page opens this step within a few seconds")
    right.button("Reveal the answer to everyone", icon=":material/visibility:", key="teach.reveal",
                 width="stretch", on_click=lambda: r.reveal(slug, step_no))
    live(r, slug, step_no)


main()
