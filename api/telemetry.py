"""Prometheus metrics of one app: latency per route, requests by status, the served model version,
an experiment's answers and events per arm.

Each app has its own registry, so several apps in one process (tests) do not collide.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class Telemetry:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.latency = Histogram("recsys_http_request_duration_seconds", "request latency by route",
                                 ["method", "route"], buckets=LATENCY_BUCKETS, registry=r)
        self.requests = Counter("recsys_http_requests", "requests by route and status",
                                ["method", "route", "status"], registry=r)
        self.model_info = Gauge("recsys_model_info", "1 for the model version being served",
                                ["version"], registry=r)
        self.model_swaps = Counter("recsys_model_swaps", "times the served model was replaced",
                                   registry=r)
        self.jobs = Counter("recsys_training_jobs", "finished training jobs by outcome", ["status"],
                            registry=r)
        self.arm_answers = Counter("recsys_experiment_answers", "/recommend answers per experiment arm",
                                   ["experiment", "arm"], registry=r)
        self.arm_events = Counter("recsys_experiment_events",
                                  "stored events per experiment arm and type (by their user_id)",
                                  ["experiment", "arm", "type"], registry=r)
        self._version: str | None = None
        # (method, route, status) -> its latency histogram and request counter: prometheus finds
        # a labelled child in about 3 us, every request; the registry keeps each child anyway
        self._children: dict[tuple[str, str, int], tuple] = {}

    def observe(self, method: str, route: str, status: int, seconds: float) -> None:
        key = (method, route, status)
        children = self._children.get(key)
        if children is None:
            children = self._children[key] = (self.latency.labels(method, route),
                                              self.requests.labels(method, route, str(status)))
        children[0].observe(seconds)
        children[1].inc()

    def model_served(self, version: str) -> None:
        if self._version is not None:
            self.model_info.remove(self._version)
            self.model_swaps.inc()
        self.model_info.labels(version).set(1)
        self._version = version

    def arm_answered(self, experiment: str, arm: str) -> None:
        self.arm_answers.labels(experiment, arm).inc()

    def arm_event(self, experiment: str, arm: str, type: str, n: int = 1) -> None:
        self.arm_events.labels(experiment, arm, type).inc(n)

    def render(self) -> bytes:
        return generate_latest(self.registry)
