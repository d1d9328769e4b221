"""HTTP edge (Flask): webhook intake, health, metrics and the dashboard; views parse, call one
service, answer."""
