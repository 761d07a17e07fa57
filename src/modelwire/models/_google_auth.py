"""Google Cloud credentials for Vertex AI, through the optional ``google-auth`` package:
``GOOGLE_ACCESS_TOKEN`` wins; otherwise application default credentials (a service
account file, ``gcloud auth application-default login``, the metadata server)."""

from __future__ import annotations

from typing import Any

from ..errors import ConfigError

SCOPES = ["https://www.googleapis.com/auth/cloud-platform"]


class GoogleCredentials:
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
            self._credentials: Any = google.auth.default(scopes=SCOPES)[0]
        except Exception as exc:  # google.auth.exceptions.DefaultCredentialsError and kin
            raise ConfigError(f"vertex: no Google credentials found ({exc}); set GOOGLE_ACCESS_TOKEN") from None

    def token(self) -> str:
        """A valid access token (blocking: refreshing may go to the network)."""
        if not self._credentials.valid:
            from google.auth.transport.requests import Request

            self._credentials.refresh(Request())
        return str(self._credentials.token)
