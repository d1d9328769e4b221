"""Small unified diffs with known risk levels under `BASE_CONFIG`, the default-branch config the
handler tests install: explicit rules and weights, so that tuning the built-in profiles never
changes what these tests expect."""

from bot.core.config.schema import CONFIG_PATH

HOT_LOOP = "src/perfbot_fixture/hot_loop.py"
GRAPHS = "src/perfbot_fixture/graphs.py"

_RULES = """risk:
  profile: generic
  rules:
    - id: test.hot-loop
      kind: path
      category: engine
      weight: 40
      description: the engine's hot loop
      paths: ["src/perfbot_fixture/hot_loop.py"]
    - id: test.graphs
      kind: path
      category: graphs
      weight: 70
      description: the CUDA graph runner
      paths: ["src/perfbot_fixture/graphs.py"]
"""

BASE_CONFIG = _RULES

# The same rules at weight 0: what a PR would like the config to say.
CONFIG_LOWERING = (
    _RULES
    + """  weights:
    test.hot-loop: 0
    test.graphs: 0
"""
)


def _edit(path: str) -> str:
    return (
        f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n"
        "@@ -10,2 +10,2 @@ def step(batch):\n-    total = 1\n+    total = 2\n     return total\n"
    )


MEDIUM = _edit(HOT_LOOP)  # 41/100
HIGH = _edit(HOT_LOOP) + _edit(GRAPHS)  # 82/100
COLD = "diff --git a/docs/index.md b/docs/index.md\n--- a/docs/index.md\n+++ b/docs/index.md\n@@ -1 +1 @@\n-old\n+new\n"

EDITS_CONFIG = MEDIUM + (
    f"diff --git a/{CONFIG_PATH} b/{CONFIG_PATH}\nnew file mode 100644\n--- /dev/null\n+++ b/{CONFIG_PATH}\n"
    f"@@ -0,0 +1,{len(CONFIG_LOWERING.splitlines())} @@\n"
    + "".join(f"+{line}\n" for line in CONFIG_LOWERING.splitlines())
)
