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
"""The modules every ``call_tf`` uses, loaded with jax2tf.

``call_tf.py`` imports this module, so that these load with
``jax.experimental.jax2tf``, as JAX's own modules load with ``jax``: not in
the first call, whose time a user sees. The package itself imports none of
them, so that importing one module loads only what it needs.
"""

# pylint: disable=unused-import
from jax.experimental.jax2tf.call_tf_lib.autodiff import jvp  # noqa: F401
from jax.experimental.jax2tf.call_tf_lib.embed import embedding  # noqa: F401
from jax.experimental.jax2tf.call_tf_lib.stablehlo import exactness  # noqa: F401
from jax.experimental.jax2tf.call_tf_lib.tf_function import shapes  # noqa: F401
# pylint: enable=unused-import
