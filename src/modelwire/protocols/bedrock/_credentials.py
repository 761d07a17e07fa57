"""Bedrock's credentials that are not a plain key, named by a preset's
``dialect["credentials"] = "aws"`` (this protocol's ``credential_kinds``): Signature Version 4
for the ``bedrock`` service, with ``botocore``'s signer and credential chain (environment,
shared config and profiles, SSO, instance roles), from the optional extra
``pip install 'modelwire[bedrock]'``. A preset whose key variable is set
(``AWS_BEARER_TOKEN_BEDROCK``) uses that key and none of this. ``apply`` blocks (it may
refresh over the network): the models layer runs it in a thread."""

from __future__ import annotations

import logging
import os
import re
from typing import Any
from urllib.parse import urlsplit

from ...errors import ConfigError

__all__ = ["AWSCredentials", "aws_region"]


def aws_region(env: Any = None) -> str | None:
    env = os.environ if env is None else env
    return env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or None


class AWSCredentials:
    """SigV4 for ``service`` (``bedrock``); ``credentials`` (botocore ``Credentials``) skip
    the chain, for tests and for callers that resolved them already."""

    def __init__(
        self, session: Any = None, *, service: str = "bedrock", credentials: Any = None, region: str | None = None
    ) -> None:
        self.service = service
        self._fixed = credentials
        self._region = region
        try:
            import botocore.session
        except ImportError:
            raise ConfigError(
                "bedrock needs credentials: set AWS_BEARER_TOKEN_BEDROCK (a Bedrock API key), or install"
                " botocore (pip install 'modelwire[bedrock]') for AWS credentials and SigV4 signing"
            ) from None
        self._session = session or botocore.session.Session(profile=os.environ.get("AWS_PROFILE") or None)
        _redact_signer_log()

    def secrets(self) -> set[str]:
        """The values of the credentials the last request was signed with (the key id, the
        secret and the session token), to mask in what a server echoes."""
        frozen = getattr(self, "_signed_with", None)
        values = (getattr(frozen, name, None) for name in ("access_key", "secret_key", "token"))
        return {v for v in values if isinstance(v, str) and v}

    def apply(
        self, method: str, url: str, headers: dict[str, str], body: bytes, *, timestamp: Any = None
    ) -> dict[str, str]:
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest

        credentials = self._fixed or self._session.get_credentials()
        if credentials is None:
            raise ConfigError(
                (
                    "bedrock: no AWS credentials found (environment, profile, SSO or instance role); or set "
                    "AWS_BEARER_TOKEN_BEDROCK"
                )
            )
        region = self._region or aws_region() or self._session.get_config_variable("region") or _region_of(url)
        if not region:
            raise ConfigError("bedrock needs a region: set AWS_REGION")
        request = AWSRequest(
            method=method,
            url=url,
            data=body,
            headers={k: v for k, v in headers.items() if k.lower() != "authorization"},
        )
        frozen = credentials.get_frozen_credentials() if hasattr(credentials, "get_frozen_credentials") else credentials
        self._signed_with = frozen
        signer = SigV4Auth(frozen, self.service, region)
        if timestamp is None:
            signer.add_auth(request)
        else:  # a fixed signing time, as AWS's test vectors use
            import botocore.auth
            from unittest import mock

            with mock.patch.object(botocore.auth, "get_current_datetime", lambda: timestamp):
                signer.add_auth(request)
        return {k.lower(): v for k, v in request.headers.items()}


_TOKEN_LINE = re.compile(r"(x-amz-security-token[:=])[^\s&;]+", re.IGNORECASE)


class _RedactToken(logging.Filter):
    """botocore's signer logs the canonical request at DEBUG, session token included: an
    application that logs DEBUG would write it out. The token is replaced in those lines."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if "security-token" in message.lower():
            record.msg, record.args = _TOKEN_LINE.sub(r"\1<redacted>", message), None
        return True


def _redact_signer_log() -> None:
    signer_log = logging.getLogger("botocore.auth")
    if not any(isinstance(f, _RedactToken) for f in signer_log.filters):
        signer_log.addFilter(_RedactToken())


def _region_of(url: str) -> str | None:
    host = urlsplit(url).hostname or ""
    parts = host.split(".")
    return parts[1] if len(parts) > 3 and parts[0] == "bedrock-runtime" else None
