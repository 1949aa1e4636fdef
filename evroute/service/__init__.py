"""evroute as a service: ``evroute serve``, a warm routing API (FastAPI on uvicorn) and a map page.

* :mod:`evroute.service.state` -- what is loaded once (network, vehicle, model) and the atomically swapped model
  versions (:class:`~evroute.service.state.ServiceState`);
* :mod:`evroute.service.schemas` -- the pydantic request and response models (the OpenAPI schema);
* :mod:`evroute.service.app` -- the ASGI app (:func:`~evroute.service.app.create_app`);
* :mod:`evroute.service.metrics` -- request counts and latency percentiles (``GET /metrics``);
* :mod:`evroute.cli.serve` -- the ``evroute serve`` command.

The queries are those of the command line (:mod:`evroute.driver.query`).  Nothing is imported here.
"""
