"""HTTP edge (Flask): webhook intake, health and metrics; views parse, call one service, answer."""
