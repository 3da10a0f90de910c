"""rota inside web frameworks: :mod:`rota.contrib.fastapi` (FastAPI and Starlette) and
:mod:`rota.contrib.django` (the ``rota[django]`` extra). Each holds only the glue:
the App's lifecycle in the framework's, and a door to enqueue from its views."""
