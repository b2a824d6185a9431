"""The ``webgpu`` target: the spec's minimum limits, options that change them, and records."""

from __future__ import annotations

import pytest

from tensorium.targets import Target, TargetError, parse_target


def test_default_target_has_the_spec_minimums() -> None:
    t = parse_target("webgpu")
    assert str(t) == "webgpu" and t.kind == "webgpu"
    assert t.limit("max_storage_buffers_per_shader_stage") == 8
    assert t.limit("max_storage_buffer_binding_size") == 128 << 20
    assert t.limit("max_compute_invocations_per_workgroup") == 256
    assert t.limit("max_compute_workgroup_storage_size") == 16 << 10
    assert t.limit("max_compute_workgroups_per_dimension") == 65535
    assert t.features == ()


def test_options_change_limits_and_features_and_round_trip() -> None:
    t = parse_target("webgpu:shader-f16,max_compute_invocations_per_workgroup=16")
    assert t.limit("max_compute_invocations_per_workgroup") == 16 and t.features == ("shader-f16",)
    assert parse_target(str(t)) == t
    assert Target.from_json(t.to_json()) == t
    assert t.key() != parse_target("webgpu").key()


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("webgpu:max_bananas=3", "unknown WebGPU limit 'max_bananas'"),
        ("webgpu:shader-f64", "unknown WebGPU feature 'shader-f64'"),
        ("webgpu:max_buffer_size=0", "must be a positive integer"),
    ],
)
def test_bad_options_name_what_is_wrong(spec: str, message: str) -> None:
    with pytest.raises(TargetError, match=message):
        parse_target(spec)


def test_unknown_limit_is_a_clear_error() -> None:
    with pytest.raises(TargetError, match="has no limit 'max_x'"):
        parse_target("webgpu").limit("max_x")


def test_malformed_limits_record() -> None:
    record = parse_target("webgpu").to_json()
    record["limits"] = [["max_buffer_size", "big"]]
    with pytest.raises(TargetError, match="'limits' must be a list"):
        Target.from_json(record)
