"""Small unified diffs with known risk levels under the built-in sglang profile."""

PYNCCL = "python/sglang/srt/distributed/device_communicators/pynccl.py"
GRAPHS = "python/sglang/srt/model_executor/cuda_graph_runner.py"

MEDIUM = f"""diff --git a/{PYNCCL} b/{PYNCCL}
--- a/{PYNCCL}
+++ b/{PYNCCL}
@@ -120,5 +120,6 @@ class PyNcclCommunicator:
     def all_reduce(self, in_tensor, op=ReduceOp.SUM, stream=None):
         if self.disabled:
             return
-        stream = current_stream()
+        torch.cuda.synchronize()
+        stream = current_stream()
         self.nccl.ncclAllReduce(buffer_type(in_tensor.data_ptr()))
"""

HIGH = (
    MEDIUM
    + f"""diff --git a/{GRAPHS} b/{GRAPHS}
--- a/{GRAPHS}
+++ b/{GRAPHS}
@@ -40,3 +40,3 @@ class CudaGraphRunner:
     def capture(self):
-        self.graph.replay()
+        self.graph.replay(); torch.cuda.synchronize()
         return self.output
"""
)

COLD = """diff --git a/docs/index.md b/docs/index.md
--- a/docs/index.md
+++ b/docs/index.md
@@ -1 +1 @@
-old
+new
"""

# Lowers the weight of every rule the MEDIUM diff fires, which only merged config may do.
CONFIG_LOWERING = """risk:
  weights:
    path.pynccl: 0
    path.communicators: 0
    function.collective: 0
    sglang.distributed: 0
    token.host-sync: 0
"""

EDITS_CONFIG = (
    MEDIUM
    + """diff --git a/.github/perfbot.yml b/.github/perfbot.yml
new file mode 100644
--- /dev/null
+++ b/.github/perfbot.yml
@@ -0,0 +1,7 @@
"""
    + "".join(f"+{line}\n" for line in CONFIG_LOWERING.splitlines())
)
