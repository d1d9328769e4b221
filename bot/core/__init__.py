"""The pure core: data in, data out. No web, GitHub, git, database, subprocess or network."""
