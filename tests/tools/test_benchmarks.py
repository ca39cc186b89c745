"""Benchmarks never restate a model's shape: they build it from the configs the package
ships (TransformerConfig's defaults, TRANSLATOR_CONFIG), so a changed default or translator
is what they measure. CONTRIBUTING.md, "Config, stated once"."""

import ast
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
SHAPE = {"d_model", "num_heads", "num_layers", "d_ff"}


def restated_shapes(text):
    """["d_model=64", …]: every shape field given a number by keyword or in a dict literal."""
    found = []
    for node in ast.walk(ast.parse(text)):
        pairs = []
        if isinstance(node, ast.Call):
            pairs = [(k.arg, k.value) for k in node.keywords]
        elif isinstance(node, ast.Dict):
            pairs = [(k.value, v) for k, v in zip(node.keys, node.values)
                     if isinstance(k, ast.Constant)]
        found += [f"{name}={value.value}" for name, value in pairs
                  if name in SHAPE and isinstance(value, ast.Constant)]
    return found


def test_no_benchmark_restates_a_model_shape():
    files = sorted(BENCHMARKS.glob("*.py"))
    assert len(files) >= 3
    restated = {p.name: restated_shapes(p.read_text(encoding="utf-8")) for p in files}
    assert not any(restated.values()), restated


def test_the_check_sees_a_restated_shape():
    assert restated_shapes("config = dict(d_model=64, num_heads=4, max_len=300)\n"
                           "m = Transformer(20, 20, d_ff=256)\n"
                           "c = {'num_layers': 2}\n") == [
        "d_model=64", "num_heads=4", "d_ff=256", "num_layers=2"]
    assert restated_shapes("config = TransformerConfig(20, 20, max_len=300)\n") == []
