"""Schemathesis over the service's own OpenAPI document (bounded: a few dozen cases per
operation, well under a minute): no 5xx, and every answer fits the documented status codes,
content types, headers and schemas. Admin is on (with its token); POST /admin/train is left out,
since every valid upload would start a training process."""

from __future__ import annotations

from collections import Counter

import pytest
import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode, checks

from cli.app import create_app

from api_support import ADMIN_TOKEN, make_artifacts, make_settings

CHECKS = [checks.not_a_server_error, checks.status_code_conformance, checks.content_type_conformance,
          checks.response_headers_conformance, checks.response_schema_conformance]
AUTH = {"Authorization": f"Bearer {ADMIN_TOKEN}"}


@pytest.fixture(scope="module")
def fuzzed_app(rec, v1, v2, data_dir, module_tmp):
    artifacts = make_artifacts(module_tmp / "a", v1, v2)
    app = create_app(make_settings(artifacts, data_dir, admin_token=ADMIN_TOKEN), recommender=rec)
    with TestClient(app):  # runs the lifespan
        yield app


def test_no_5xx_and_answers_fit_the_schema(fuzzed_app, rec):
    schema = schemathesis.openapi.from_asgi("/openapi.json", fuzzed_app).exclude(
        path="/admin/train", method="POST")
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 12
    statuses: Counter = Counter()
    for operation in operations:
        for mode in GenerationMode:  # valid inputs, then invalid ones
            fuzz(operation, mode, statuses, rec.catalog.item_ids[:50])
    assert statuses[200] > 60 and statuses[422] > 50, statuses  # it did reach the service
    assert not [s for s in statuses if s >= 500], statuses


def fuzz(operation, mode: GenerationMode, statuses: Counter, known: list[str]) -> None:
    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(max_examples=40, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck), phases=[Phase.explicit, Phase.generate])
    def run(case):
        if mode is GenerationMode.POSITIVE:  # real item ids, so that answers are not all 404s
            _known_ids(case, known)
        statuses[case.call_and_validate(headers=AUTH, checks=CHECKS).status_code] += 1

    try:
        run()
    except Unsatisfiable:  # an operation without inputs has no invalid ones
        assert mode is GenerationMode.NEGATIVE


def _known_ids(case, known: list[str]) -> None:
    for params in (case.body, case.path_parameters):
        if isinstance(params, dict):
            for key in ("item_id", "item_a", "item_b"):
                if isinstance(params.get(key), str):
                    params[key] = known[len(params[key]) % len(known)]
