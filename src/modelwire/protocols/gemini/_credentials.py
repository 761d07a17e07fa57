"""Vertex AI's credentials that are not a plain key, named by a preset's
``dialect["credentials"] = "google"`` (this protocol's ``credential_kinds``): application
default credentials through the optional ``google-auth`` package (a service account file,
``gcloud auth application-default login``, the metadata server), as a bearer token refreshed
when it expires. A preset whose key variable is set (``GOOGLE_ACCESS_TOKEN``) uses that key
and none of this. ``apply`` blocks (it may refresh over the network): the models layer runs
it in a thread."""

from __future__ import annotations

from typing import Any

from ...errors import ConfigError

__all__ = ["GoogleCredentials"]


class GoogleCredentials:
    """Application default credentials for Google Cloud, as a bearer token."""

    SCOPES = ["https://www.googleapis.com/auth/cloud-platform"]

    def __init__(self) -> None:
        try:
            import google.auth
            import google.auth.transport.requests  # noqa: F401
        except ImportError:
            raise ConfigError(
                "vertex needs a token: set GOOGLE_ACCESS_TOKEN, or install google-auth"
                " (pip install 'modelwire[google]') for application default credentials"
            ) from None
        try:
            self._credentials: Any = google.auth.default(scopes=self.SCOPES)[0]
        except Exception as exc:  # DefaultCredentialsError and kin: say what to do instead
            raise ConfigError(
                f"vertex: no Google credentials found ({type(exc).__name__}); set GOOGLE_ACCESS_TOKEN"
            ) from None

    def apply(self, method: str, url: str, headers: dict[str, str], body: bytes) -> dict[str, str]:
        if not self._credentials.valid:
            from google.auth.transport.requests import Request

            self._credentials.refresh(Request())
        return {**headers, "authorization": f"Bearer {self._credentials.token}"}
