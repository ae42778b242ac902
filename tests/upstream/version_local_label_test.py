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
"""Tests that jax.__version_info__ ignores a PEP 440 local version label."""

import pathlib
import re
import types

from absl.testing import absltest
from absl.testing import parameterized
import jax
from jax._src import test_util as jtu

jax.config.parse_flags_with_absl()


def _stamped_version_module(release_version: str) -> types.ModuleType:
  """jax/version.py as a build stamps it with `release_version`.

  The build writes the wheel's version into `_release_version`, as
  `jax.version._write_version` does; the module computes `__version__` and
  `__version_info__` from it when it is imported.

  Args:
    release_version: the version to stamp, e.g. "0.10.2+local.1".

  Returns:
    A fresh module executed from the installed jax/version.py's source.
  """
  path = pathlib.Path(jax.version.__file__)
  source, count = re.subn(
      r"^_release_version\b.*$",
      f"_release_version: str = {release_version!r}",
      path.read_text(encoding="utf-8"), count=1, flags=re.MULTILINE)
  if count != 1:
    raise AssertionError(f"{path} has no `_release_version = ...` line")
  module = types.ModuleType("jax_version_under_test")
  module.__file__ = str(path)
  exec(compile(source, str(path), "exec"), module.__dict__)  # pylint: disable=exec-used
  return module


class VersionLocalLabelTest(jtu.JaxTestCase):

  @parameterized.named_parameters(
      ("_label", "0.10.2+local.1", (0, 10, 2)),
      ("_four_part_release", "0.12.0.1+local.2", (0, 12, 0, 1)),
      ("_label_of_three_parts", "1.2.3+local.7.8", (1, 2, 3)),
      ("_dev_build", "1.2.3.dev20240101+g6643af3", (1, 2, 3)),
      ("_no_label", "1.2.3", (1, 2, 3)),
  )
  def test_version_info_of_a_labelled_build(self, version, expected):
    module = _stamped_version_module(version)
    self.assertEqual(module.__version__, version)
    self.assertEqual(module.__version_info__, expected)

  def test_installed_version_info_is_the_public_version(self):
    if "+" not in jax.__version__:
      self.skipTest(f"jax {jax.__version__} has no local version label")
    public = jax.__version__.split("+", 1)[0]
    if not re.fullmatch(r"[0-9]+(\.[0-9]+)+", public):
      self.skipTest(f"jax {jax.__version__} is not a release")
    self.assertEqual(jax.__version_info__,
                     tuple(int(p) for p in public.split(".")))


if __name__ == "__main__":
  absltest.main(testLoader=jtu.JaxTestLoader())
