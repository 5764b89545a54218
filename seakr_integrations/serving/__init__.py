"""Serving SeaKR from vLLM's own server: seakr's endpoint plugin for ``vllm serve`` (``seakr serve``) and the request
limits.  The wire format it shares with ``RemoteBackend`` is ``seakr_integrations.wire``, which belongs to neither."""
