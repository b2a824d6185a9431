"""The fuzzer's evaluation: deliberately broken variants of Tensorium's passes and compilation path (mutants)."""
