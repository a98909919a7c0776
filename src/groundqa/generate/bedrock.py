"""`bedrock:MODEL_ID`: answers from a model on Amazon Bedrock through boto3's Converse API.

`MODEL_ID` is what Bedrock calls the model: a model id
(`anthropic.claude-3-5-haiku-20241022-v1:0`), an inference profile
(`us.anthropic.claude-3-5-haiku-20241022-v1:0`) or an ARN. The grounded prompt
of `prompts.py` goes in as `system=[{"text": ...}]` (the rules) and one user
message (the fenced sources and the question); `max_tokens` and `temperature`
from the generation settings go in as `inferenceConfig`. A whole reply joins
the text blocks of `converse`; streaming yields the text deltas of
`converse_stream`'s event stream.

Where it connects is what boto3 resolves, with one addition:

- the region is `AWS_REGION`, else boto3's own (`AWS_DEFAULT_REGION`, the
  profile's `region` in `~/.aws/config`);
- the profile is `AWS_PROFILE` (boto3 reads it);
- the credentials are boto3's chain (`AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY`,
  the profile's keys, SSO, `credential_process`, and on AWS hosts the
  container or instance role, which boto3 asks the local metadata endpoint
  for; `AWS_EC2_METADATA_DISABLED=true` stops that), or a Bedrock API key in
  `AWS_BEARER_TOKEN_BEDROCK`;
- the endpoint is `GeneratorOptions.base_url` (`--generator-url`) when given,
  else boto3's (`AWS_ENDPOINT_URL_BEDROCK_RUNTIME`, else the region's).

It refuses to start without a region or credentials, naming the variables that
set them. The client is built once, with `connect_timeout` and `read_timeout`
of `options.timeout_s` and one attempt in all: a failure is reported at once,
never retried behind the user's back, and nothing but the endpoint is asked
anything. Every failure (an error status such as a wrong model id, denied
access or throttling; an unreachable endpoint; a timeout; an error event or a
stream that breaks off before `messageStop`) becomes a one-line
`GenerationError` with the secret key, session token and API key scrubbed from
it. It needs the extra: `pip install 'groundqa[bedrock]'`.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from groundqa.errors import GenerationError, GroundqaError, UsageError
from groundqa.generate import Evidence, Generation, GeneratorOptions
from groundqa.generate.llm import finish, refuse_without_sources, relay
from groundqa.generate.prompts import PROMPT_VERSION, SYSTEM_PROMPT, user_message
from groundqa.providers import HttpCall, check_base_url, env_secret, require_model, shown_url
from groundqa.text import shorten

_INSTALL = "bedrock: needs pip install 'groundqa[bedrock]'"
_NO_REGION = (
    "bedrock: no AWS region; set AWS_REGION (or AWS_DEFAULT_REGION, or a region in the "
    "AWS_PROFILE's config)"
)
_NO_CREDENTIALS = (
    "bedrock: no AWS credentials found; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, "
    "or AWS_PROFILE (or AWS_BEARER_TOKEN_BEDROCK for a Bedrock API key)"
)
_API_KEY = "AWS_BEARER_TOKEN_BEDROCK"
# Error codes that mean the credentials, not the request, were refused.
_AUTH_CODES = frozenset(
    {
        "AccessDeniedException",
        "UnrecognizedClientException",
        "InvalidSignatureException",
        "ExpiredTokenException",
    }
)


def _boto3() -> None:
    try:
        importlib.import_module("boto3")
    except ImportError as exc:
        raise UsageError(_INSTALL) from exc


def _connect(base_url: str | None, timeout_s: float) -> tuple[Any, Any]:
    """A `bedrock-runtime` client and the credentials it signs with (None with an API key).

    Refuses without a region or credentials; a profile that does not exist or a
    credential source that fails is a `UsageError` too.
    """
    import boto3
    from botocore.config import Config
    from botocore.exceptions import BotoCoreError

    try:
        session = boto3.Session(region_name=env_secret("AWS_REGION"))
        region = session.region_name
        if not region:
            raise UsageError(_NO_REGION)
        credentials = None if env_secret(_API_KEY) else session.get_credentials()
        if credentials is None and env_secret(_API_KEY) is None:
            raise UsageError(_NO_CREDENTIALS)
        config = Config(
            connect_timeout=timeout_s,
            read_timeout=timeout_s,
            retries={"total_max_attempts": 1, "mode": "standard"},
        )
        client = session.client(
            "bedrock-runtime", region_name=region, endpoint_url=base_url, config=config
        )
    except BotoCoreError as exc:
        raise UsageError(f"bedrock: {' '.join(str(exc).split())}") from None
    return client, credentials


def _reason(exc: Exception) -> str:
    """An exception's own message: urllib3 packs (message, cause) into its args."""
    first = exc.args[0] if exc.args else None
    return first if isinstance(first, str) and first else str(exc)


@dataclass
class BedrockGenerator:
    model: str
    base_url: str | None = None
    timeout_s: float = 60.0
    name: str = field(init=False)
    region: str = field(init=False)
    _client: Any = field(init=False, repr=False, compare=False)
    _credentials: Any = field(init=False, repr=False, compare=False)

    streams = True

    def __post_init__(self) -> None:
        self.name = f"bedrock:{self.model}"
        _boto3()
        self._client, self._credentials = _connect(self.base_url, self.timeout_s)
        self.region = str(self._client.meta.region_name)

    @classmethod
    def from_spec(cls, model: str, options: GeneratorOptions) -> BedrockGenerator:
        base_url = check_base_url("bedrock", options.base_url) if options.base_url else None
        return cls(
            model=require_model("bedrock", model, "anthropic.claude-3-5-haiku-20241022-v1:0"),
            base_url=base_url,
            timeout_s=options.timeout_s,
        )

    def http_call(self, operation: str = "converse") -> HttpCall:
        """What errors name and scrub: the URL of `operation` and the secrets signed with now."""
        from botocore.exceptions import BotoCoreError

        secrets = [env_secret(_API_KEY) or ""]
        if self._credentials is not None:
            try:
                frozen = self._credentials.get_frozen_credentials()
            except BotoCoreError:
                pass  # credentials that fail to refresh fail the request itself, in `_errors`
            else:
                secrets += [frozen.secret_key or "", frozen.token or ""]
        url = f"{str(self._client.meta.endpoint_url).rstrip('/')}/model/{self.model}/{operation}"
        return HttpCall("bedrock", url, self.timeout_s, secrets=tuple(s for s in secrets if s))

    def _refused(self, call: HttpCall, exc: Any) -> GroundqaError:
        """An error the service answered (a status, or an exception event in a stream)."""
        from botocore.exceptions import EventStreamError

        error = exc.response.get("Error", {})
        code = str(error.get("Code") or "an error")
        code = code[:1].upper() + code[1:]  # an exception event names it `throttlingException`
        detail = str(error.get("Message") or "no error message")
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        if code in _AUTH_CODES or status in (401, 403):
            hint = (
                "; check the AWS credentials (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or "
                f"AWS_PROFILE) and that they may use {self.model} in {self.region}"
            )
        elif code in ("ValidationException", "ResourceNotFoundException"):
            hint = (
                f"; check the model id {self.model!r}: a Bedrock model or inference profile "
                f"available in {self.region}"
            )
        elif code == "ThrottlingException" or status == 429:
            hint = "; Bedrock is limiting this account's requests: ask again later"
        else:
            hint = ""
        where = shown_url(call.url)
        if isinstance(exc, EventStreamError) or status is None:
            head = f"bedrock stream from {where} reported {code}"
        else:
            head = f"bedrock at {where} answered HTTP {status}: {code}"
        return call.error(f"{head}: {shorten(detail, 300)}{hint}")

    @contextmanager
    def _errors(self, call: HttpCall) -> Iterator[None]:
        """boto3's exceptions as one-line GenerationErrors, secrets scrubbed."""
        import urllib3.exceptions
        from botocore.eventstream import ParserError
        from botocore.exceptions import (
            BotoCoreError,
            ClientError,
            ConnectTimeoutError,
            EndpointConnectionError,
            HTTPClientError,
            NoCredentialsError,
            ReadTimeoutError,
        )
        from botocore.exceptions import ConnectionError as BotoConnectionError

        try:
            yield
        except GenerationError:
            raise
        except ClientError as exc:  # EventStreamError, an error event in a stream, too
            raise self._refused(call, exc) from None
        # botocore's ReadTimeoutError derives from its vendored urllib3, not from urllib3;
        # urllib3's own escapes while an event stream is read.
        except (ReadTimeoutError, ConnectTimeoutError, urllib3.exceptions.ReadTimeoutError):
            raise call.timed_out() from None
        except EndpointConnectionError:
            raise call.unreachable() from None
        except NoCredentialsError:
            raise call.error(_NO_CREDENTIALS) from None
        except ParserError as exc:
            raise call.malformed(f"a broken event-stream message ({exc})") from None
        except (HTTPClientError, BotoConnectionError, urllib3.exceptions.HTTPError) as exc:
            raise call.error(
                f"bedrock request to {shown_url(call.url)} broke off: {_reason(exc)}"
            ) from None
        except BotoCoreError as exc:
            raise call.error(
                f"bedrock request to {shown_url(call.url)} failed: {_reason(exc)}"
            ) from None

    def _request(self, system: str, user: str, config: dict[str, Any]) -> dict[str, Any]:
        return {
            "modelId": self.model,
            "system": [{"text": system}],
            "messages": [{"role": "user", "content": [{"text": user}]}],
            "inferenceConfig": config,
        }

    def _converse(self, request: dict[str, Any]) -> str:
        """The text of one whole `converse` reply."""
        call = self.http_call("converse")
        with self._errors(call):
            reply = self._client.converse(**request)
        message = (reply.get("output") or {}).get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, list):
            raise call.malformed("the reply has no output.message.content")
        return "".join(
            block["text"]
            for block in content
            if isinstance(block, dict) and isinstance(block.get("text"), str)
        )

    def complete(self, system: str, user: str, max_tokens: int) -> str:
        """The model's reply to one plain prompt (used to rewrite follow-up questions)."""
        return self._converse(
            self._request(system, user, {"maxTokens": max_tokens, "temperature": 0.0})
        )

    def _answer_request(self, evidence: Evidence) -> dict[str, Any]:
        s = evidence.settings
        config = {"maxTokens": s.max_tokens, "temperature": s.temperature}
        return self._request(SYSTEM_PROMPT, user_message(evidence), config)

    def generate(self, evidence: Evidence) -> Generation:
        early = refuse_without_sources(evidence, PROMPT_VERSION)
        if early is not None:
            return early
        text = self._converse(self._answer_request(evidence))
        return finish(text, evidence, PROMPT_VERSION, backend=self.name)

    def stream(self, evidence: Evidence) -> Iterator[str | Generation]:
        return relay(evidence, lambda: self._pieces(evidence), PROMPT_VERSION, backend=self.name)

    def _pieces(self, evidence: Evidence) -> Iterator[str]:
        """The text deltas of `converse_stream`, up to `messageStop`."""
        call = self.http_call("converse-stream")
        with self._errors(call):
            events = self._client.converse_stream(**self._answer_request(evidence))["stream"]
            try:
                for event in events:
                    if "messageStop" in event:
                        return
                    text = event.get("contentBlockDelta", {}).get("delta", {}).get("text")
                    if isinstance(text, str):
                        yield text
            finally:
                events.close()
            raise call.error(
                f"bedrock stream from {shown_url(call.url)} broke off before messageStop"
            )


__all__ = ["BedrockGenerator"]
