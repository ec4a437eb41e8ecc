"""Learn: lessons for a class. Each step asks a question (predict), reveals the answer with a live figure and a short
explanation, then offers one control to try. Lesson and step live in the URL (``?lesson=<slug>&step=<n>``), so a
teacher shares "lesson 3, step 2"; answers are kept for the session. Content and numbers: rfviz.lessons."""

from __future__ import annotations

import os

import streamlit as st

from app_pages import _ui as ui
from rfviz.lessons import LESSONS, get_lesson
from rfviz.params import Param
from rfviz.server.room import ENV_DB, STUDENT_POLL_SECONDS, Room, new_session_id


@st.cache_resource(show_spinner=False)
def _room(path: str) -> Room:
    return Room(path)


ROOM = _room(os.environ[ENV_DB]) if os.environ.get(ENV_DB) else None  # the class's store; None without a room


def follow_the_class(state: ui.PageState) -> tuple[str, int, bool] | None:
    """In a classroom: when the teacher changed the class (a new version in the store), open the step the teacher
    opened. Returns where the class is and whether its answer is revealed (None without a room or an opened step)."""
    if ROOM is None:
        return None
    now = ROOM.state()
    if now.version != st.session_state.get("learn.room.version"):
        st.session_state["learn.room.version"] = now.version
        if now.lesson in LESSONS and now.step is not None and now.step <= len(LESSONS[now.lesson].steps):
            st.session_state[state.key("lesson")] = now.lesson
            st.session_state[state.key("step")] = str(now.step)
    return (now.lesson, now.step, now.revealed) if now.lesson in LESSONS else None


@st.fragment(run_every=STUDENT_POLL_SECONDS)
def watch_the_class() -> None:
    """Rerun the page when the teacher moves the class or reveals (a new version in the room store); it draws
    nothing itself, so a poll that finds no change sends the browser nothing."""
    if ROOM.state().version != st.session_state.get("learn.room.version"):
        st.rerun(scope="app")


def record(slug: str, step_no: int, choices: tuple[str, ...], key: str) -> None:
    """The radio's callback: this session's prediction into the room store (one per session and step)."""
    choice = st.session_state.get(key)
    if ROOM is not None and choice in choices:
        session = st.session_state.setdefault("learn.room.session", new_session_id())
        ROOM.record(slug, step_no, session, choices.index(choice))

with ui.page(
    "learn",
    "Learn random features",
    "Short lessons on live figures: first **predict** the answer, then the figure **reveals** it, then **try** a "
    "control and watch the figure move. Every lesson and step has its own address: copy the URL to share it "
    "(add `&embed=true` to show the page inside a course page).",
) as state:
    slugs = list(LESSONS)
    in_class = follow_the_class(state)
    slug = state.selectbox("Lesson", "lesson", slugs, slugs[0], container=st.sidebar,
                           format_func=lambda s: f"{slugs.index(s) + 1} · {LESSONS[s].title}",
                           parse=lambda text: get_lesson(text).slug)
    lesson = LESSONS[slug]
    count = len(lesson.steps)
    step_no = int(state.selectbox("Step", "step", [str(i) for i in range(1, count + 1)], "1", container=st.sidebar,
                                  disabled=count == 1,
                                  help="this lesson has one step" if count == 1 else f"{count} steps"))
    step = lesson.steps[step_no - 1]
    state.show_url_errors()


    @ui.shared_figure  # closed-form steps: one figure and text for every session at this control value
    def _closed_form_step(slug: str, index: int, value: float):
        return LESSONS[slug].steps[index].figure_and_text(value)


    def _step(value: float):
        if not step.samples:
            return _closed_form_step(slug, step_no - 1, value)
        return ui.memo("learn", (slug, step_no - 1, value),  # Monte Carlo: shared, in the server's pool
                       lambda report: step.figure_and_text(value))


    st.header(f"{slugs.index(slug) + 1} · {lesson.title}")
    st.caption(lesson.idea + (f" · step {step_no} of {count}" if count > 1 else ""))
    st.subheader(f"Predict: {step.title}")
    st.markdown(step.question)
    answer_key = f"learn.answer.{slug}.{step_no}"
    choice = st.radio("Your prediction", step.choices, index=None, key=answer_key, on_change=record,
                      args=(slug, step_no, step.choices, answer_key))
    shown_key = f"learn.shown.{slug}.{step_no}"
    revealed = in_class is not None and in_class == (slug, step_no, True)  # the teacher revealed it to everyone
    if choice is None and not st.session_state.get(shown_key) and not revealed:
        st.button("Show the answer without predicting", key=f"{shown_key}.button",
                  on_click=lambda: st.session_state.update({shown_key: True}))
        st.info("Pick an answer: the figure and the explanation appear once you have predicted.",
                icon=":material/psychology:")
    else:
        right = step.choices[step.answer]
        if choice == right:
            st.success(f"Right: {right}.", icon=":material/check_circle:")
        elif choice is not None:
            st.warning(f"Not quite: the answer is “{right}”.", icon=":material/lightbulb:")
        control: Param = step.control
        with ui.guard():
            value = control.default
            fig, text, facts = _step(value)
            st.markdown(text)
            st.subheader("Now try")
            name = f"{slug}-{control.name}"
            if step.options:
                value = st.select_slider(control.label or control.name, options=list(step.options),
                                         value=control.default, key=state.key(name))
            else:
                value = state.slider(control.label or control.name, name, control.low, control.high,
                                     control.default, step=1 if control.kind == "int" else None)
            if value != control.default:
                fig, text, facts = _step(value)
            st.markdown(step.try_text.format(**facts))
            ui.plot(fig, key=f"learn-{slug}-{step_no}")
        nav = st.columns(2)
        target = ((slug, str(step_no + 1)) if step_no < count else
                  (slugs[slugs.index(slug) + 1], "1") if slugs.index(slug) + 1 < len(slugs) else None)
        if target is not None:
            label = (f"Next: step {step_no + 1}" if target[0] == slug
                     else f"Next lesson: {LESSONS[target[0]].title}")
            nav[0].button(label, icon=":material/arrow_forward:", key="learn.next",
                          on_click=lambda: st.session_state.update({state.key("lesson"): target[0],
                                                                    state.key("step"): target[1]}))
        query = "&".join(f"{k}={v}" for k, v in lesson.query.items())
        nav[1].link_button("See it in full on its page", f"./{lesson.page}" + (f"?{query}" if query else ""),
                           icon=":material/open_in_new:")
    st.caption(f"Share this step: add `?lesson={slug}&step={step_no}` to the page's address. The lessons' names "
               "in addresses: " + ", ".join(f"{i + 1} `{s}`" for i, s in enumerate(slugs)) + ".")
    if ROOM is not None:
        st.caption("In class: your prediction is counted, anonymously, on the teacher's screen; the page follows the "
                   "step the teacher opens.")
        watch_the_class()
