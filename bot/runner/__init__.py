"""Runner side: benchmark base and head revisions interleaved on one machine and write a results file."""
