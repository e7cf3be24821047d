"""The service's engine: the only part of the service that imports the pipeline.

It grades with the CLI's pipeline (:mod:`.grading`), runs queued runs
(:mod:`.worker`) and patch gates (:mod:`.gates`), and holds the server's state
(:mod:`.state`); it reaches storage through :mod:`gradebox.service.store` only
and knows nothing of HTTP.
"""
