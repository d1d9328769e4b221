"""The service layer's ports, one module per family of the outside world it needs: `github`
(GitHub and the failures it names), `queue`, `sign_in` (the dashboard's), `store` (the durable
state, one port per aggregate, bundled by `Store`), `dashboard` (the store's dashboard queries and
their records) and `sessions` (the dashboard's signed-in sessions). The adapters implement them;
they import nothing of the service above them (its records and failures only)."""
