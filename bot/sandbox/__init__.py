"""perfbot's sandbox, a development tool: the whole bot on this machine against a local stand-in
for GitHub (`perfbot sandbox`), and what `perfbot deliver` needs to build and try deliveries
without GitHub. Nothing here is used when perfbot serves a real GitHub."""
