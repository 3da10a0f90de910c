"""One module per resource. Each route names its one scope through a guard from
:mod:`rota.api.auth` (health, the OpenAPI document and the dev token endpoint are the
only routes without one)."""
