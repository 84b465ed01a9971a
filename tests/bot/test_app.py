"""The application's one error shape: JSON errors are ``{"detail": sentence}`` (validation
adds ``errors``), a dashboard route that names nothing is the dashboard's 404 page, unknown
filter values and empty reports are refused."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from bot.app import create_app
from tests.conftest import CI_TOKEN

AUTH = {"Authorization": f"Bearer {CI_TOKEN}"}


@pytest.fixture
def client(settings):
    with TestClient(create_app(settings)) as test_client:
        yield test_client


def test_an_unknown_filter_value_is_422_in_the_one_shape(client) -> None:
    response = client.get("/api/v1/fixes", params={"state": "bogus"})
    assert response.status_code == 422
    body = response.json()
    assert body["detail"].startswith("invalid request: query.state: Input should be 'open'")
    assert body["errors"][0]["loc"] == ["query", "state"]
    assert client.get("/api/v1/fixes", params={"state": "open"}).json() == []


def test_an_empty_report_is_422_and_nothing_is_stored(client) -> None:
    response = client.post("/api/v1/ci-failures", content=b"  \n", headers=AUTH)
    assert response.status_code == 422
    assert response.json() == {"detail": "the report is empty"}


def test_api_errors_are_one_sentence(client) -> None:
    missing = client.get("/api/v1/fixes/999")
    assert missing.status_code == 404 and missing.json() == {"detail": "no fix 999"}
    unknown = client.get("/api/v1/no-such-thing")
    assert unknown.status_code == 404 and unknown.json() == {"detail": "Not Found"}


@pytest.mark.parametrize("path", ["/fixes/abc", "/no/such/page"])
def test_a_dashboard_route_that_names_nothing_is_the_404_page(client, path: str) -> None:
    response = client.get(path)
    assert response.status_code == 404
    assert response.headers["content-type"].startswith("text/html")
    assert f"There is no page {path}." in response.text


def test_the_ci_report_endpoint_documents_its_bodies(client) -> None:
    operation = client.get("/openapi.json").json()["paths"]["/api/v1/ci-failures"]["post"]
    content = operation["requestBody"]["content"]
    assert set(content) == {"application/json", "text/plain", "application/xml"}
    analysis = content["application/json"]["schema"]
    assert "failures" in analysis["properties"] and "$ref" not in str(analysis)


@pytest.mark.parametrize(
    ("page", "asset"), [("/docs", "swagger-ui-bundle.js"), ("/redoc", "redoc.standalone.js")]
)
def test_the_api_docs_load_their_assets_from_the_service_not_a_cdn(
    client, page: str, asset: str
) -> None:
    html = client.get(page).text
    assert f"/static-offline-docs/{asset}" in html
    assert "cdn." not in html and "jsdelivr" not in html
    served = client.get(f"/static-offline-docs/{asset}")
    assert served.status_code == 200 and len(served.content) > 100_000
