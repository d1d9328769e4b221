"""Performance risk: a unified diff and a rule set in, a `RiskReport` (score, level, reasons) out;
a stream of commits in, a `Triage` ranking them most suspicious first out.
"""
