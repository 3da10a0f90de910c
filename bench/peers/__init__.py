"""The peers rota is measured against, each driven through its own documented API."""
