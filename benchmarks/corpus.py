"""Lines of Python for the generated benchmark inputs, at the density of real engine diffs."""

# Ordinary lines, and the risky ones perfbot looks for at about the density of real engine
# diffs (1.7% of changed lines in SGLang's last 200 commits).
PLAIN = [
    "        if self.enabled and not self.disabled:",
    "        return self.forward_impl(hidden_states, residual)",
    "        logger.info('step %d done', step)",
    "        self.buffer[: len(batch)] = batch",
    "    # A comment that explains why this branch exists.",
    "        batch_size, seq_len = input_ids.shape",
    "        for index, request in enumerate(self.waiting_queue):",
    "            request.output_ids.append(next_token_id)",
    "        hidden_states = self.mlp(self.post_attention_layernorm(hidden_states))",
    "        raise ValueError(f'unsupported dtype {dtype}')",
]
RISKY = [
    "        value = tensor.item()",
    "        torch.distributed.all_reduce(x, group=self.group)",
    "        os.environ.setdefault('NCCL_ALGO', 'Ring')",
    "        out = torch.empty(n, device=device)",
]
# 1 line in 64 of a diff's changed lines is risky, near real SGLang history (1.7%).
CODE_LINES = PLAIN * 16 + RISKY
