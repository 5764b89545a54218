"""Serving SeaKR from vLLM's own server: seakr's endpoint plugin for ``vllm serve`` (``seakr serve``), the request
limits, and the wire format ``RemoteBackend`` reads."""
