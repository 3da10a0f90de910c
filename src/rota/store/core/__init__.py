"""The one SQL store's parts, one concept each; :mod:`rota.store.sql_store` joins them."""
