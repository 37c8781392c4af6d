"""The math engine's extension points: element readers, the shared Caps, and no near-copies of engine code."""

from __future__ import annotations

import ast
import dataclasses
import difflib

import pytest
from audit.graders.math.engine import Caps, MathEngine
from audit.graders.math.v1 import CONFIG as CONFIG1
from audit.graders.math.v1 import MathEquiv1
from audit.graders.math.v2 import CONFIG as CONFIG2
from audit.graders.math.v2 import MathEquiv2
from audit.graders.math.v3 import CONFIG as CONFIG3
from audit.graders.math.v3 import MathEquiv3

from tests.conftest import REPO

VERSIONS = (MathEquiv1, MathEquiv2, MathEquiv3)


def test_one_parse_element_walks_the_readers_of_each_version():
    # A version adds element readers (or overrides one); it never copies parse_element.
    assert all("parse_element" not in vars(cls) for cls in VERSIONS)
    engine = MathEngine.element_readers
    for cls in VERSIONS:
        readers = cls.element_readers
        assert [r for r in readers if r in engine] == list(engine)  # the engine's readers, in its order
        assert len(set(readers)) == len(readers) and all(callable(getattr(cls, r)) for r in readers)
    assert MathEquiv3.element_readers == (
        "parse_equation", "read_group", "read_empty_set", "read_separated", "read_unit", "read_glued_unit",
        "read_text_command", "read_text", "read_base_numeral", "plain_number")
    with pytest.raises(ValueError, match="no element reader named read_nothing"):
        MathEngine.readers_after({"read_nothing": ("read_text",)})


def test_element_readers_decide_in_order():
    v2, v3 = MathEquiv2(), MathEquiv3()
    assert type(v2.parse_element("4210_{5}")).__name__ == "Number"  # the base is dropped
    assert type(v3.parse_element("4210_{5}")).__name__ == "BaseNumber"  # rule 9
    assert type(v2.parse_element("5cm")).__name__ == "Text"  # a run of letters is text
    assert type(v3.parse_element("5cm")).__name__ == "WithUnit"  # rule 9: a glued unit
    assert type(v3.parse_element("5\\text{ squared}")).__name__ == "Text"  # rule 8: not a unit
    assert type(v2.parse_element("5\\text{ squared}")).__name__ == "WithUnit"


def test_every_config_holds_one_caps():
    caps_fields = {f.name for f in dataclasses.fields(Caps)}
    assert len(caps_fields) == 10 and Caps.__dataclass_params__.frozen
    for config in (CONFIG1, CONFIG2, CONFIG3):
        assert config.caps == Caps()
        assert not caps_fields & {f.name for f in dataclasses.fields(config)}


@pytest.mark.parametrize("cls", VERSIONS)
@pytest.mark.parametrize("answer, status, reason", [
    ("x" * 2001, "parse_error_answer", "answer is 2,001 chars, over MAX_ANSWER_CHARS=2000"),
    ("(" * 30 + "1" + ")" * 30, "parse_error_answer", "nested deeper than MAX_NESTING=24"),
    (",".join(["1"] * 33), "parse_error_answer", "33 elements, over MAX_ELEMENTS=32"),
    ("1, ()", "parse_error_answer", "empty brackets '()'"),
    ("x=", "parse_error_answer", "equation with an empty side: 'x='"),
    ("1" * 1001, "parse_error_answer", "element is 1,001 chars, over MAX_PARSE_CHARS=600"),
    ("x+" * 400 + "1", "parse_error_answer", "element is 801 chars, over MAX_PARSE_CHARS=600"),
])
def test_parse_errors_name_their_cap_word_for_word(cls, answer, status, reason):
    j = cls().grade(answer, "1")
    assert (j.correct, j.status, j.reason) == (None, status, reason)


def _bodies() -> list[tuple[str, list[str]]]:
    out = []
    for path in sorted((REPO / "graders" / "math").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                body = node.body[1:] if ast.get_docstring(node) else node.body
                lines = ast.unparse(ast.Module(body=body, type_ignores=[])).splitlines()
                if len(lines) >= 10:
                    out.append((f"{path.name}:{node.name}", lines))
    return out


def test_no_function_of_the_math_package_is_a_near_copy_of_another():
    # A copied-and-edited method drifts from its original (`parse_element` of @3 was 86% the engine's, and
    # `read_sympy`, `constants_equal`, `functions_equal` over 60%): a version overrides a hook instead.
    # The closest pair left is two different estimates of log10|e| (engine.log10_abs, v3.magnitude: 59%).
    bodies = _bodies()
    near = []
    for i, (a, la) in enumerate(bodies):
        for b, lb in bodies[i + 1:]:
            ratio = difflib.SequenceMatcher(None, la, lb, autojunk=False).ratio()
            if ratio >= 0.6:
                near.append(f"{a} ~ {b} ({ratio:.0%} of lines)")
    assert not near, near
