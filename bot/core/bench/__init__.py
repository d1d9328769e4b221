"""Benchmarks on the GPU runners, decided without I/O: the bot-runner contract, who may start what,
what a push or a close does to a pull request's runs, reading a results artifact safely, and what a
finished run says on the pull request."""
