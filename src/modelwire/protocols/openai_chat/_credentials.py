"""Azure OpenAI's credentials that are not a plain key: a Microsoft Entra ID token, named by a
preset's ``dialect["credentials"] = "azure"`` (this protocol's ``credential_kinds``). A preset
whose key variable is set (``AZURE_OPENAI_API_KEY``) uses that key and none of this."""

from __future__ import annotations

from typing import Any

from ...errors import ConfigError

__all__ = ["AzureCredentials"]


class AzureCredentials:
    """A Microsoft Entra ID token for Azure OpenAI (``azure-identity``'s
    ``DefaultAzureCredential``: environment, managed identity, Azure CLI ...), sent as a
    bearer token and renewed a minute before it expires. ``credential`` may be any object
    with azure-identity's ``get_token(scope)``."""

    SCOPE = "https://cognitiveservices.azure.com/.default"

    def __init__(self, credential: Any = None, clock: Any = None) -> None:
        import time

        if credential is None:
            try:
                from azure.identity import DefaultAzureCredential  # pyright: ignore[reportMissingImports] - the azure extra
            except ImportError:
                raise ConfigError(
                    "Azure OpenAI needs a key or a token: set AZURE_OPENAI_API_KEY, or install azure-identity"
                    " (pip install 'modelwire[azure]') for Microsoft Entra ID"
                ) from None
            credential = DefaultAzureCredential()
        self._credential = credential
        self._clock = clock or time.time
        self._token: Any = None

    def apply(self, method: str, url: str, headers: dict[str, str], body: bytes) -> dict[str, str]:
        if self._token is None or self._token.expires_on - 60 <= self._clock():
            try:
                self._token = self._credential.get_token(self.SCOPE)
            except Exception as exc:  # ClientAuthenticationError and kin: one line that says what to do
                raise ConfigError(
                    (
                        f"Azure OpenAI: no Microsoft Entra ID token ({type(exc).__name__}: {exc}); set "
                        "AZURE_OPENAI_API_KEY, or sign in (az login)"
                    )
                ) from None
        return {**headers, "authorization": f"Bearer {self._token.token}"}
