# Copyright 2026 The JAX Authors.
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
"""A persistent cache of ``call_tf``'s conversions, beside JAX's own.

A process that calls a TF function under ``jax.jit`` traces it (TF runs its
Python, as upstream's ``call_tf`` does), converts the trace to HLO with
TensorFlow's XLA lowering (tf2xla) and reads the module into the StableHLO
interpreter. The trace must happen in every process: the function reads
Python state. What follows it depends only on the traced graph, so it is
kept on disk: a re-run script (a notebook restarted, a CI job) finds the
HLO and the interpreter's copy of the module, and does no tf2xla work and
reads no module text.

Where: the ``call_tf`` subdirectory of JAX's persistent compilation cache
(the option ``jax_compilation_cache_dir``, or
``jax.experimental.compilation_cache.compilation_cache.set_cache_dir``),
on while JAX's cache is (``jax_enable_compilation_cache``); so it is off
until a cache directory is set, as JAX's is. Its size is bounded by the
option ``jax_call_tf_cache_max_size`` (bytes; -1: no bound, 0: off): the
least recently used entries go first.

What an entry is keyed by (:func:`conversion_key`): a digest of the traced
graph (its ops, constants and attributes, the functions it calls), the
argument signature, the dtype and shape of each captured value, the
platform, the versions of TensorFlow, jax, jaxlib, NumPy and Python,
TensorFlow's settings that change its lowering (``TF_XLA_FLAGS``,
``XLA_FLAGS``, op determinism, TensorFloat-32, the graph optimizer's
options), and a digest of the source of the code that makes the entry.
Captured values are never in an entry: the module takes them as operands
(its trailing parameters), and every call reads their current values; so a
variable assigned between two runs is read anew. (TF makes a captured
tensor of at most 128 elements a constant of the graph: then its value is
in the graph's digest.)

Safety: an entry is written to a temporary file and renamed into place
(readers see whole entries or none, however many processes write); it
starts with a header holding its full key, its length and the SHA-256 of
its payload, checked on every read. An entry that fails a check (truncated,
corrupted, written by another version, a hash collision) is ignored and
rewritten, never trusted. The cache never fails a call: an error reading
or writing it is a miss (logged; a write error once, as a warning).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
import dataclasses
import functools
import hashlib
import json
import logging
import os
import pathlib
import sys
import tempfile
import threading
import time
import types

from jax._src import config
from jax.experimental.jax2tf.call_tf_lib import compat
from jax.experimental.jax2tf.call_tf_lib import errors
from jax.experimental.jax2tf.call_tf_lib.tf_function import captures
from jax.experimental.jax2tf.call_tf_lib.tf_function import traces
import numpy as np
import tensorflow as tf

logger = logging.getLogger(__name__)

max_size = config.int_state(
    name="jax_call_tf_cache_max_size",
    default=256 * 2**20,
    help=(
        "The maximum size (in bytes) of call_tf's persistent cache of "
        "TensorFlow functions converted to HLO and StableHLO, the call_tf "
        "subdirectory of the persistent compilation cache "
        "(jax_compilation_cache_dir), used while that cache is. When the "
        "entries exceed it, the least recently used ones are deleted. 0 "
        "disables call_tf's cache; -1 means no limit."),
)

SUBDIRECTORY = "call_tf"
# The entry format; a change of it is a new key (old entries are misses).
FORMAT = 1
_MAGIC = b"JAX-CALL-TF-CACHE\n"
_SUFFIX = ".entry"
_TMP_PREFIX = ".tmp-"
# A temporary file older than this is a crashed writer's.
_STALE_TMP_S = 3600.


@dataclasses.dataclass(frozen=True)
class Key:
  """What an entry is kept by.

  Attributes:
    kind: what the entry holds ("hlo", "module", ...).
    text: every part of the key, one per line; an entry holds it whole.
  """
  kind: str
  text: str

  @functools.cached_property
  def file_name(self) -> str:
    return (f"{self.kind}-{hashlib.sha256(self.text.encode()).hexdigest()}"
            f"{_SUFFIX}")


class Store:
  """One cache directory: entries read, written, and evicted."""

  def __init__(self, directory: pathlib.Path, size_bound: int):
    self.directory = directory
    self.size_bound = size_bound

  def get(self, key: Key) -> bytes | None:
    """The payload kept for ``key``, or None (absent, or failing a check)."""
    path = self.directory / key.file_name
    try:
      data = path.read_bytes()
    except OSError:
      return None
    payload = _payload(data, key)
    if payload is None:
      logger.debug("call_tf: ignored the cache entry %s (not whole, or "
                   "not of this key)", path)
      return None
    try:
      os.utime(path)  # recently used: evicted last
    except OSError:
      pass
    return payload

  def put(self, key: Key, payload: bytes) -> None:
    """Keeps ``payload`` for ``key`` (atomically), then bounds the size."""
    data = _entry(key, payload)
    if 0 <= self.size_bound < len(data):
      return
    try:
      self.directory.mkdir(parents=True, exist_ok=True)
      fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=_TMP_PREFIX)
      try:
        with os.fdopen(fd, "wb") as f:
          f.write(data)
        os.replace(tmp, self.directory / key.file_name)
      except BaseException:
        _remove(pathlib.Path(tmp))
        raise
    except OSError as e:
      _warn_once((str(self.directory), e.errno),
                 errors.cache_write_warning(str(self.directory), e))
      return
    if self.size_bound >= 0:
      self.evict()

  def evict(self) -> None:
    """Deletes the least recently used entries beyond the size bound.

    Temporary files of writers that crashed go too. Safe while other
    processes read and write: a file deleted under a reader is a miss.
    """
    entries, total = [], 0
    now = time.time()
    try:
      listing = list(os.scandir(self.directory))
    except OSError:
      return
    for e in listing:
      try:
        st = e.stat()
      except OSError:
        continue
      if e.name.startswith(_TMP_PREFIX):
        if now - st.st_mtime > _STALE_TMP_S:
          _remove(pathlib.Path(e.path))
      elif e.name.endswith(_SUFFIX):
        entries.append((st.st_mtime, st.st_size, e.path))
        total += st.st_size
    for _, size, path in sorted(entries):
      if total <= self.size_bound:
        break
      _remove(pathlib.Path(path))
      total -= size


def _entry(key: Key, payload: bytes) -> bytes:
  header = json.dumps({"format": FORMAT, "key": key.text,
                       "size": len(payload),
                       "sha256": hashlib.sha256(payload).hexdigest()}
                      ).encode()
  return _MAGIC + len(header).to_bytes(4, "big") + header + payload


def _payload(data: bytes, key: Key) -> bytes | None:
  """The payload of an entry's bytes, if every check holds."""
  start = len(_MAGIC) + 4
  if len(data) < start or not data.startswith(_MAGIC):
    return None
  size = int.from_bytes(data[len(_MAGIC):start], "big")
  try:
    header = json.loads(data[start:start + size])
  except (ValueError, RecursionError):  # not JSON; JSON nested too deep
    return None
  payload = data[start + size:]
  if not (isinstance(header, dict) and header.get("format") == FORMAT
          and header.get("key") == key.text
          and header.get("size") == len(payload)
          and header.get("sha256") == hashlib.sha256(payload).hexdigest()):
    return None
  return payload


def _remove(path: pathlib.Path) -> None:
  try:
    path.unlink()
  except OSError:
    pass


_WARNED: set[tuple[str, int | None]] = set()
_WARNED_LOCK = threading.Lock()


def _warn_once(what: tuple[str, int | None], message: str) -> None:
  """Logs ``message`` the first time ``what`` (a directory and an errno)
  fails: the messages of one failure differ (a temporary file's name)."""
  with _WARNED_LOCK:
    if what in _WARNED:
      return
    _WARNED.add(what)
  logger.warning(message)


def store() -> Store | None:
  """The cache as the options set it, or None where it is off."""
  size_bound = max_size.value
  directory = config.compilation_cache_dir.value
  if (not config.enable_compilation_cache.value or not directory
      or size_bound == 0):
    return None
  if "://" in directory:  # JAX's cache may be remote; this one is local
    return None
  return Store(pathlib.Path(directory) / SUBDIRECTORY, size_bound)


def get_or_make(key: Key | None, make: Callable[[], bytes]) -> bytes:
  """The payload kept for ``key``; else ``make()``'s, kept.

  Args:
    key: the entry's key; None: not kept (the value cannot be keyed).
    make: computes the payload.
  """
  cache = store() if key is not None else None
  if cache is not None:
    found = cache.get(key)
    if found is not None:
      return found
  value = make()
  if cache is not None:
    cache.put(key, value)
  return value


def conversion_key(kind: str,
                   concrete_fn: tf.types.experimental.ConcreteFunction,
                   specs: Sequence[tf.TensorSpec], platform: str,
                   code: Sequence[str]) -> Key | None:
  """The key of what is made of a traced function for ``platform``.

  Args:
    kind: what the entry holds.
    concrete_fn: the trace.
    specs: its argument specs (static shapes).
    platform: "CPU", "GPU" or "TPU".
    code: digests of the code that makes the entry
      (:func:`source_digest`), so that changed code makes new entries.

  Returns:
    The key; None where the entry must not be kept: a captured value that
    is not a numeric tensor or variable of a static shape (its structure,
    not only its value, would be in the module), or shapes not static.
  """
  captured = _captured_signature(concrete_fn)
  if captured is None or not all(s.shape.is_fully_defined() for s in specs):
    return None
  parts = [
      f"format {FORMAT}", f"kind {kind}", f"platform {platform}",
      _versions(), _tf_settings(),
      "code " + " ".join([source_digest(sys.modules[__name__]), *code]),
      "graph " + traces.graph_digest(concrete_fn),
      "args " + " ".join(_spec(s.dtype, s.shape) for s in specs),
      "captured " + " ".join(captured)]
  return Key(kind, "\n".join(parts))


def _spec(dtype: tf.dtypes.DType, shape: tf.TensorShape) -> str:
  return f"{dtype.name}[{','.join(str(d) for d in shape.as_list())}]"


def _captured_signature(concrete_fn: tf.types.experimental.ConcreteFunction
                        ) -> list[str] | None:
  """Each captured value's kind, dtype and shape; None if one is unkeyable."""
  try:
    objects = captures.captured_objects(concrete_fn)
  except ValueError:
    return None
  res = []
  for c in objects:
    dtype = c.dtype.base_dtype
    if (not (dtype.is_floating or dtype.is_integer or dtype.is_complex
             or dtype.is_bool) or not c.shape.is_fully_defined()):
      return None
    kind = "variable" if isinstance(c, tf.Variable) else "tensor"
    res.append(f"{kind}:{_spec(dtype, c.shape)}")
  return res


@functools.cache
def _versions() -> str:
  import jax  # pylint: disable=g-import-not-at-top
  import jaxlib.version  # pylint: disable=g-import-not-at-top
  return (f"versions jax {jax.__version__} jaxlib "
          f"{jaxlib.version.__version__} tensorflow {tf.__version__} "
          f"{tf.version.GIT_VERSION} numpy {np.__version__} python "
          f"{sys.version_info.major}.{sys.version_info.minor}")


# The environment variables that change what TF's lowering makes.
_TF_ENVIRONMENT = ("TF_XLA_FLAGS", "XLA_FLAGS", "TF_DETERMINISTIC_OPS")


def _tf_settings() -> str:
  """TensorFlow's settings that change what its lowering makes."""
  determinism = compat.op_determinism_enabled()
  tf32 = tf.config.experimental.tensor_float_32_execution_enabled()
  optimizer = sorted(tf.config.optimizer.get_experimental_options().items())
  environment = {v: os.environ.get(v) for v in _TF_ENVIRONMENT}
  return (f"tf determinism {determinism} tf32 {tf32} optimizer {optimizer} "
          f"environment {sorted(environment.items())}")


def source_digest(*modules: types.ModuleType) -> str:
  """A digest of the modules' source files, once per process."""
  return _source_digest(tuple(m.__name__ for m in modules))


@functools.cache
def _source_digest(module_names: tuple[str, ...]) -> str:
  digest = hashlib.sha256()
  for name in module_names:
    path = getattr(sys.modules.get(name), "__file__", None)
    try:
      digest.update(pathlib.Path(path).read_bytes() if path else b"?")
    except OSError:
      digest.update(b"?")
    digest.update(name.encode())
  return digest.hexdigest()
