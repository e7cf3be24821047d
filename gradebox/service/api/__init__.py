"""The service's HTTP API: one FastAPI router per resource.

Routers read and check requests and shape responses; they grade through
:mod:`gradebox.service.engine` and never import the pipeline or write SQL.
"""
