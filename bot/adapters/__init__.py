"""The shell's edges: git, and later GitHub, the database and the queue."""
