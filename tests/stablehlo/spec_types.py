# Copyright 2026 The JAX call_tf fork authors.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     https://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.
"""The StableHLO specification's element types, and the values tested.

Each element type of the specification ("Types": ``TensorElementType``) by
its MLIR name, with its NumPy (ml_dtypes) type, and the values the
conformance test feeds each op: the type's special values (signed zeros,
the smallest subnormal and normal numbers, the largest finite number,
infinities, NaN; the extremes of integer types) and a few ordinary ones.
Needs no JAX.
"""

from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np

BOOL = ("i1",)
SINT = ("i2", "i4", "i8", "i16", "i32", "i64")
UINT = ("ui2", "ui4", "ui8", "ui16", "ui32", "ui64")
INT = SINT + UINT
# The float types of at most 8 bits.
SMALL_FLOAT = ("f4E2M1FN", "f6E2M3FN", "f6E3M2FN", "f8E3M4", "f8E4M3",
               "f8E4M3FN", "f8E4M3FNUZ", "f8E4M3B11FNUZ", "f8E5M2",
               "f8E5M2FNUZ", "f8E8M0FNU")
FLOAT = SMALL_FLOAT + ("bf16", "f16", "f32", "f64")
COMPLEX = ("complex<f32>", "complex<f64>")
ALL = BOOL + INT + FLOAT + COMPLEX

DTYPES: dict[str, np.dtype] = {
    "i1": np.dtype(np.bool_), "i2": np.dtype(ml_dtypes.int2),
    "i4": np.dtype(ml_dtypes.int4), "i8": np.dtype(np.int8),
    "i16": np.dtype(np.int16), "i32": np.dtype(np.int32),
    "i64": np.dtype(np.int64), "ui2": np.dtype(ml_dtypes.uint2),
    "ui4": np.dtype(ml_dtypes.uint4), "ui8": np.dtype(np.uint8),
    "ui16": np.dtype(np.uint16), "ui32": np.dtype(np.uint32),
    "ui64": np.dtype(np.uint64),
    "f4E2M1FN": np.dtype(ml_dtypes.float4_e2m1fn),
    "f6E2M3FN": np.dtype(ml_dtypes.float6_e2m3fn),
    "f6E3M2FN": np.dtype(ml_dtypes.float6_e3m2fn),
    "f8E3M4": np.dtype(ml_dtypes.float8_e3m4),
    "f8E4M3": np.dtype(ml_dtypes.float8_e4m3),
    "f8E4M3FN": np.dtype(ml_dtypes.float8_e4m3fn),
    "f8E4M3FNUZ": np.dtype(ml_dtypes.float8_e4m3fnuz),
    "f8E4M3B11FNUZ": np.dtype(ml_dtypes.float8_e4m3b11fnuz),
    "f8E5M2": np.dtype(ml_dtypes.float8_e5m2),
    "f8E5M2FNUZ": np.dtype(ml_dtypes.float8_e5m2fnuz),
    "f8E8M0FNU": np.dtype(ml_dtypes.float8_e8m0fnu),
    "bf16": np.dtype(ml_dtypes.bfloat16), "f16": np.dtype(np.float16),
    "f32": np.dtype(np.float32), "f64": np.dtype(np.float64),
    "complex<f32>": np.dtype(np.complex64),
    "complex<f64>": np.dtype(np.complex128),
}

# Element types by bit width (bitcast_convert keeps the width).
BITS: dict[str, int] = {
    **{t: 1 for t in BOOL}, **{t: int(t.lstrip("ui")) for t in INT},
    "f4E2M1FN": 4, "f6E2M3FN": 6, "f6E3M2FN": 6,
    **{t: 8 for t in SMALL_FLOAT if t.startswith("f8")},
    "bf16": 16, "f16": 16, "f32": 32, "f64": 64,
    "complex<f32>": 64, "complex<f64>": 128,
}


def tensor(shape: tuple[int, ...], ty: str) -> str:
  """The MLIR tensor type of `shape` and element type `ty`."""
  return "tensor<" + "".join(f"{d}x" for d in shape) + ty + ">"


def real_part(ty: str) -> str:
  """The type of a complex type's parts (a real type's own)."""
  return {"complex<f32>": "f32", "complex<f64>": "f64"}.get(ty, ty)


def is_float(ty: str) -> bool:
  return ty in FLOAT


def is_inexact(ty: str) -> bool:
  return ty in FLOAT or ty in COMPLEX


def _integers(ty: str) -> np.ndarray:
  info = ml_dtypes.iinfo(DTYPES[ty])
  lo, hi = int(info.min), int(info.max)
  wanted = [lo, lo + 1, -2, -1, 0, 1, 2, 3, 5, 7, 100, -100, 12345,
            hi - 1, hi]
  kept = list(dict.fromkeys(v for v in wanted if lo <= v <= hi))
  return np.array([np.array(v, object) for v in kept], object).astype(
      DTYPES[ty]) if ty == "ui64" else np.array(kept).astype(DTYPES[ty])


def _floats(ty: str) -> np.ndarray:
  info = ml_dtypes.finfo(DTYPES[ty])
  tiny, sub, big = (float(info.smallest_normal),
                    float(info.smallest_subnormal), float(info.max))
  wanted = [0., -0., 1., -1., .5, -2.5, 3., 1.75, tiny, -tiny, sub, -sub,
            big, -big, np.inf, -np.inf, np.nan, .1, 100., -7., 1e30]
  with np.errstate(over="ignore", invalid="ignore"):
    return np.array(wanted, np.float64).astype(DTYPES[ty])


def _complexes(ty: str) -> np.ndarray:
  part = real_part(ty)
  parts = _floats(part)[[0, 1, 2, 3, 5, 10, 12, 14, 15, 16]]
  re, im = np.repeat(parts, len(parts)), np.tile(parts, len(parts))
  out = np.empty(len(re), DTYPES[ty])
  out.real, out.imag = re, im
  return out


def values(ty: str) -> np.ndarray:
  """The values of `ty` an op is tested on (1-D; special values first)."""
  if ty in BOOL:
    return np.array([False, True])
  if ty in INT:
    return _integers(ty)
  if ty in COMPLEX:
    return _complexes(ty)
  return _floats(ty)


def pairs(ty: str, limit: int = 24) -> tuple[np.ndarray, np.ndarray]:
  """Every pair of (at most `limit` of) the values: two 1-D arrays."""
  v = values(ty)[:limit]
  a, b = zip(*itertools.product(range(len(v)), repeat=2))
  return v[list(a)], v[list(b)]


def filled(shape: tuple[int, ...], ty: str, shift: int = 0) -> np.ndarray:
  """An array of `shape` cycling through the values (from `shift`)."""
  v = np.roll(values(ty), -shift)
  return np.resize(v, shape)
