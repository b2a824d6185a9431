"""Pipeline text: canonical round trips, typed options, and the exact errors for bad text."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar

import pytest

from tensorium.errors import PassError
from tensorium.ir.core import Operation
from tensorium.passes import Pass, base, get_pass, parse_pipeline, pass_names, register_pass
from tensorium.passes.fold import Fold


@dataclass(frozen=True)
class OptionsPass(Pass):
    """Test pass with one option of each kind; does nothing."""

    name: ClassVar[str] = "test-options"
    count: int = 1
    ratio: float = 0.5
    flag: bool = False
    label: str = "plain"

    def run(self, module: Operation) -> None:
        return None


@pytest.fixture(autouse=True, scope="module")
def _test_passes() -> Iterator[None]:
    """Register this file's test passes while its tests run (so no other test, the fuzzer's included, sees them)."""
    with pytest.MonkeyPatch.context() as patch:
        for cls in (OptionsPass,):
            patch.setitem(base._PASSES, cls.name, cls)
        yield


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("canonicalize,cse,dce", "canonicalize,cse,dce"),
        ("fold{max-elements=1048576},canonicalize", "fold,canonicalize"),
        (" fold { max-elements = 16 } , cse ", "fold{max-elements=16},cse"),
        ("fold{},dce,dce", "fold,dce,dce"),
        ("", ""),
        ("canonicalize{max-iterations=4}", "canonicalize{max-iterations=4}"),
        ("test-options{label=plain,count=+7}", "test-options{count=7}"),
        ("test-options{ratio=2}", "test-options{ratio=2.0}"),
        ("test-options{ratio=-1.5e-3,flag=true}", "test-options{ratio=-0.0015,flag=true}"),
        ('test-options{label="a, b=c"}', 'test-options{label="a, b=c"}'),
        ('test-options{label="x"}', "test-options{label=x}"),
        ("test-options{label=nhwc-8}", "test-options{label=nhwc-8}"),
        ("test-options{ratio=inf}", "test-options{ratio=inf}"),
    ],
)
def test_pipeline_text_round_trips(text: str, canonical: str) -> None:
    pipeline = parse_pipeline(text)
    assert str(pipeline) == canonical
    assert parse_pipeline(canonical) == pipeline
    assert str(parse_pipeline(canonical)) == canonical


def test_options_are_typed_dataclass_fields() -> None:
    pipeline = parse_pipeline('test-options{count=-3,ratio=1,flag=false,label="a\\"b"},fold{max-elements=0}')
    first, second = pipeline.passes
    assert first == OptionsPass(count=-3, ratio=1.0, flag=False, label='a"b')
    assert isinstance(first, OptionsPass) and isinstance(first.ratio, float)
    assert second == Fold(max_elements=0)
    assert len(pipeline) == 2 and list(pipeline) == [first, second]
    assert str(first) == 'test-options{count=-3,ratio=1.0,label="a\\"b"}'


def _error(text: str) -> str:
    with pytest.raises(PassError) as info:
        parse_pipeline(text)
    return str(info.value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("canonicalise,cse", "pipeline column 1: unknown pass 'canonicalise' (did you mean 'canonicalize'?)"),
        ("cse,dcee", "pipeline column 5: unknown pass 'dcee' (did you mean 'dce'?)"),
        (
            "fold{max-element=3}",
            "pipeline column 6: pass 'fold' has no option 'max-element' (did you mean 'max-elements'?); "
            "its options are max-elements",
        ),
        (
            "fold{max_elements=3}",
            "pipeline column 6: pass 'fold' has no option 'max_elements' (did you mean 'max-elements'?); "
            "its options are max-elements",
        ),
        (
            "test-options{zzz=1}",
            "pipeline column 14: pass 'test-options' has no option 'zzz'; its options are count, ratio, flag, label",
        ),
        ("cse{a=1}", "pipeline column 5: pass 'cse' takes no options, got 'a'"),
        (
            "fold{max-elements=abc}",
            "pipeline column 19: option 'max-elements' of pass 'fold' expects an integer, got 'abc'",
        ),
        (
            "fold{max-elements=1.5}",
            "pipeline column 19: option 'max-elements' of pass 'fold' expects an integer, got '1.5'",
        ),
        (
            'fold{max-elements="3"}',
            "pipeline column 19: option 'max-elements' of pass 'fold' expects an integer, got '\"3\"'",
        ),
        (
            "test-options{flag=yes}",
            "pipeline column 19: option 'flag' of pass 'test-options' expects true or false, got 'yes'",
        ),
        (
            "test-options{ratio=1.2.3}",
            "pipeline column 20: option 'ratio' of pass 'test-options' expects a number, got '1.2.3'",
        ),
        ("fold{max-elements=-1}", "pipeline column 1: pass 'fold': max-elements must be at least 0, got -1"),
        (
            "fold{max-elements=1,max-elements=2}",
            "pipeline column 21: option 'max-elements' of pass 'fold' is given twice",
        ),
        ("fold{max-elements", "pipeline column 18: expected '=' after option 'max-elements'"),
        ("fold{max-elements=", "pipeline column 19: expected a value for option 'max-elements'"),
        ("fold{max-elements=1", "pipeline column 20: expected ',' or '}' after an option"),
        ("fold{=1}", "pipeline column 6: expected an option name"),
        ("cse dce", "pipeline column 5: expected ',' between passes"),
        ("cse,,dce", "pipeline column 5: expected a pass name"),
        ("cse,", "pipeline column 5: expected a pass name"),
    ],
)
def test_bad_pipelines_give_exact_errors(text: str, message: str) -> None:
    column = int(message.split(":")[0].removeprefix("pipeline column "))
    assert _error(text) == f"{message}\n  {text}\n  {' ' * (column - 1)}^"


def test_unknown_pass_without_a_close_name_lists_the_known_ones() -> None:
    message = _error("zzzzzz")
    known = ", ".join(pass_names())
    assert message.splitlines()[0] == f"pipeline column 1: unknown pass 'zzzzzz'; known passes are {known}"


def test_registry_lookups() -> None:
    assert {"canonicalize", "cse", "dce", "fold"} <= set(pass_names())
    assert pass_names() == sorted(pass_names())
    assert get_pass("fold") is Fold
    with pytest.raises(PassError, match=r"^unknown pass 'flod' \(did you mean 'fold'\?\)$"):
        get_pass("flod")


def test_register_pass_rejects_bad_classes() -> None:
    with pytest.raises(ValueError, match="pass 'fold' is registered twice"):

        @register_pass
        @dataclass(frozen=True)
        class AnotherFold(Pass):
            name: ClassVar[str] = "fold"

    with pytest.raises(ValueError, match="option 'sizes' of pass 'test-bad' must be an int, float, bool or str"):

        @register_pass
        @dataclass(frozen=True)
        class BadOption(Pass):
            name: ClassVar[str] = "test-bad"
            sizes: tuple[int, ...] = ()

    with pytest.raises(ValueError, match="option 'count' of pass 'test-bad' needs a default"):

        @register_pass
        @dataclass(frozen=True)
        class NoDefault(Pass):
            name: ClassVar[str] = "test-bad"
            count: int

    with pytest.raises(ValueError, match="pass class Nameless has no name"):

        @register_pass
        @dataclass(frozen=True)
        class Nameless(Pass):
            pass

    assert "test-bad" not in pass_names()
