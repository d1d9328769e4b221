"""The JSON of a risk report (`perfbot score --format json`), byte for byte: a golden file of a
diff that fills every part of it (lowered weights and why, rules also met, a dependency move, an
improvement, a warning, a note), made with the report's JSON as it was written out by hand; the
JSON now derived from the model (`serialise`) must give the same bytes."""

from __future__ import annotations

import json

from bot.core.risk import diff as diffs
from bot.core.risk import ruleset
from bot.core.risk import scoring as risk

EVERYTHING = """\
diff --git a/python/sglang/srt/distributed/device_communicators/pynccl.py b/python/sglang/srt/distributed/device_communicators/pynccl.py
index 1111111..2222222 100644
--- a/python/sglang/srt/distributed/device_communicators/pynccl.py
+++ b/python/sglang/srt/distributed/device_communicators/pynccl.py
@@ -10,3 +10,4 @@ class PyNcclCommunicator:
     def __init__(self, group):
-        self.world = group.size()
+        self.world = group.size().item()
+        os.environ["NCCL_ALGO"] = "ring"
         self.group = group
@@ -140,5 +141,5 @@ class PyNcclCommunicator:
     def all_reduce(self, in_tensor, op=ReduceOp.SUM, stream=None):
-        torch.cuda.synchronize()
-        value = in_tensor.sum().item()
+        out = torch.empty_like(in_tensor)
+        dist.barrier(); torch.cuda.synchronize()
         return out_tensor
diff --git a/python/sglang/srt/model_executor/cuda_graph_runner.py b/python/sglang/srt/model_executor/cuda_graph_runner.py
index 5555555..6666666 100644
--- a/python/sglang/srt/model_executor/cuda_graph_runner.py
+++ b/python/sglang/srt/model_executor/cuda_graph_runner.py
@@ -20,3 +20,3 @@ class CudaGraphRunner:
     def capture(self):
-        old_name = self.make()
-        return old_name
+        new_name = self.make()
+        return new_name
diff --git a/pyproject.toml b/pyproject.toml
index 7777777..8888888 100644
--- a/pyproject.toml
+++ b/pyproject.toml
@@ -5,3 +5,3 @@ dependencies = [
     "numpy",
-    "torch==2.3.0",
+    "torch==2.4.1",
 ]
diff --git a/.github/perfbot.yml b/.github/perfbot.yml
index 9999999..aaaaaaa 100644
--- a/.github/perfbot.yml
+++ b/.github/perfbot.yml
@@ -1 +1 @@
-risk: {}
+risk: {profile: sglang}
diff --git a/docs/guide.md b/docs/guide.md
index 3333333..4444444 100644
--- a/docs/guide.md
+++ b/docs/guide.md
@@ -1 +1 @@
-old
+new
"""


def test_the_json_of_a_report_is_unchanged(file_regression):
    parsed = diffs.parse(EVERYTHING)
    report = risk.score(parsed, ruleset.build(None, (f.path for f in parsed.files)))
    text = json.dumps(report.to_dict(), indent=2, ensure_ascii=False) + "\n"
    assert "possible improvement" in text and " of 25: in set-up code" in text and "rename only" in text
    file_regression.check(text, extension=".json")
