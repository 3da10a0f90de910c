"""The sync and the async door over the calls in ``rota.client.calls``: each drives a
call's generator over httpx, retries what is safe to retry, and turns problem responses
into :class:`ApiError`. Nothing about any one API call lives here."""

from __future__ import annotations

import asyncio
import functools
import random
import ssl
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Generator, Iterator, Mapping
from typing import Any, Generic, ParamSpec, TypeVar, overload
from urllib.parse import urlsplit

import httpx

from rota.client.calls import Call, JsonObject, Pause, Request, check_timeout
from rota.endpoint import DEFAULT_URL
from rota.errors import InvalidArgument, RotaError
from rota.tls import client_context

P = ParamSpec("P")
T = TypeVar("T")
RETRY_STATUSES = frozenset({502, 503, 504})
# What a door moves: requests out (or pauses), responses or transport errors back.
Exchanges = Generator[httpx.Request | Pause, httpx.Response | httpx.TransportError | None, T]


class ApiError(RotaError):
    """A problem response (RFC 9457): ``status``, ``type``, ``title``, ``detail`` and the
    whole body in ``problem``."""

    def __init__(self, status: int, problem: Mapping[str, Any]) -> None:
        self.status = status
        self.problem = dict(problem)
        self.type: str = str(problem.get("type") or "about:blank")
        self.title: str = str(problem.get("title") or f"HTTP {status}")
        self.detail: str = str(problem.get("detail") or self.title)
        super().__init__(f"{self.detail} (HTTP {status})")


class ServerUnreachable(RotaError):
    pass


class CertificateRefused(ServerUnreachable):
    """The server's TLS certificate does not verify: not trusted, expired, another name."""


def _certificate_refusal(exc: BaseException) -> str | None:
    """The verification failure behind a transport error, if that is what it was."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ssl.SSLCertVerificationError):
            return seen.verify_message or seen.reason or "verification failed"
        seen = seen.__cause__ or seen.__context__
    return None


class _Door:
    """What both clients share: checked settings, request building, decoding, the
    retry schedule."""

    _http: httpx.Client | httpx.AsyncClient

    def __init__(
        self,
        url: str = DEFAULT_URL,
        token: str | None = None,
        *,
        timeout: float = 10.0,
        retries: int = 2,
        ca_file: str | None = None,
    ) -> None:
        self.url = _check_url(url)
        # The server's certificate is verified against ca_file, else the system's CAs.
        self._verify: ssl.SSLContext | bool = client_context(ca_file) if ca_file else True
        self.ca_file = ca_file
        self.timeout = check_timeout("timeout", timeout)
        if isinstance(retries, bool) or not isinstance(retries, int) or not 0 <= retries <= 10:
            raise InvalidArgument("retries", retries, "an integer from 0 to 10")
        self.retries = retries
        self._headers = {"Authorization": f"Bearer {token}"} if token else {}

    def _decode(self, response: httpx.Response) -> Any:
        if response.status_code >= 400:
            try:
                problem = response.json()
            except ValueError:
                problem = {"detail": response.text[:200] or response.reason_phrase}
            raise ApiError(response.status_code, problem if isinstance(problem, dict) else {})
        if response.status_code == 204 or not response.content:
            return None
        return response.json()

    def _unreachable(self, exc: httpx.TransportError) -> ServerUnreachable:
        refused = _certificate_refusal(exc)
        if refused is not None:
            trusted = f"the CA in {self.ca_file}" if self.ca_file else "the system's CAs"
            return CertificateRefused(
                f"the server at {self.url} presented a certificate that {trusted} do not "
                f"vouch for ({refused}); give the CA that signed it (--ca-file, "
                "ROTA_CA_FILE, client.ca_file)"
            )
        return ServerUnreachable(f"cannot reach the rota server at {self.url} ({exc})")

    def _exchanges(self, call: Call[T]) -> Exchanges[T]:
        """``call`` as HTTP exchanges, still without I/O: yields a request to send (or a
        pause) and is sent back the response or the transport error. Retries what is safe
        to retry and decodes answers, so both doors only move bytes and sleep."""
        try:
            step = next(call)
            while True:
                if isinstance(step, Pause):
                    yield step
                    step = call.send(None)
                else:
                    step = call.send((yield from self._exchange(step)))
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]

    def _exchange(self, step: Request) -> Exchanges[Any]:
        tries = 1 + self.retries if step.retryable else 1
        for attempt in range(tries):
            answer = yield self._http.build_request(
                step.method,
                step.path,
                params=dict(step.params),
                json=step.body,
                headers=dict(step.headers),
            )
            if isinstance(answer, httpx.TransportError):
                if not _should_retry(attempt, tries, None):
                    raise self._unreachable(answer)
            elif isinstance(answer, httpx.Response) and not _should_retry(attempt, tries, answer):
                return self._decode(answer)
            yield Pause(_backoff(attempt))
        raise AssertionError("unreachable")  # pragma: no cover


def _check_url(url: object) -> str:
    if not isinstance(url, str) or not url.strip():
        raise InvalidArgument("url", url, "the server's base URL, e.g. http://127.0.0.1:5017")
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise InvalidArgument("url", url, "an http:// or https:// URL with a host")
    return url.strip().rstrip("/")


def _backoff(attempt: int) -> float:
    """0.1 s, 0.2 s, 0.4 s ... capped at 2 s, with full jitter so clients that failed
    together do not retry together."""
    return random.uniform(0, min(2.0, 0.1 * 2**attempt))


def _should_retry(attempt: int, tries: int, response: httpx.Response | None) -> bool:
    if attempt + 1 >= tries:
        return False
    return response is None or response.status_code in RETRY_STATUSES


class SyncDoor(_Door):
    _http: httpx.Client

    def __init__(
        self,
        url: str = DEFAULT_URL,
        token: str | None = None,
        *,
        timeout: float = 10.0,
        retries: int = 2,
        transport: httpx.BaseTransport | None = None,
        ca_file: str | None = None,
    ) -> None:
        super().__init__(url, token, timeout=timeout, retries=retries, ca_file=ca_file)
        self._http = httpx.Client(
            base_url=self.url,
            headers=self._headers,
            timeout=self.timeout,
            transport=transport,
            verify=self._verify,
        )

    def close(self) -> None:
        self._http.close()

    def perform(self, call: Call[T]) -> T:
        exchanges = self._exchanges(call)
        try:
            step = next(exchanges)
            while True:
                if isinstance(step, Pause):
                    time.sleep(step.seconds)
                    step = exchanges.send(None)
                    continue
                try:
                    answer: httpx.Response | httpx.TransportError = self._http.send(step)
                except httpx.TransportError as exc:
                    answer = exc
                step = exchanges.send(answer)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]

    def pages(self, first: Callable[[str | None], Call[JsonObject]]) -> Iterator[JsonObject]:
        cursor: str | None = None
        while True:
            page = self.perform(first(cursor))
            yield from page["items"]
            cursor = page.get("next_cursor")
            if not cursor:
                return


class AsyncDoor(_Door):
    _http: httpx.AsyncClient

    def __init__(
        self,
        url: str = DEFAULT_URL,
        token: str | None = None,
        *,
        timeout: float = 10.0,
        retries: int = 2,
        transport: httpx.AsyncBaseTransport | None = None,
        ca_file: str | None = None,
    ) -> None:
        super().__init__(url, token, timeout=timeout, retries=retries, ca_file=ca_file)
        self._http = httpx.AsyncClient(
            base_url=self.url,
            headers=self._headers,
            timeout=self.timeout,
            transport=transport,
            verify=self._verify,
        )

    async def aclose(self) -> None:
        await self._http.aclose()

    async def perform(self, call: Call[T]) -> T:
        exchanges = self._exchanges(call)
        try:
            step = next(exchanges)
            while True:
                if isinstance(step, Pause):
                    await asyncio.sleep(step.seconds)
                    step = exchanges.send(None)
                    continue
                try:
                    answer: httpx.Response | httpx.TransportError = await self._http.send(step)
                except httpx.TransportError as exc:
                    answer = exc
                step = exchanges.send(answer)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]

    async def pages(
        self, first: Callable[[str | None], Call[JsonObject]]
    ) -> AsyncIterator[JsonObject]:
        cursor: str | None = None
        while True:
            page = await self.perform(first(cursor))
            for item in page["items"]:
                yield item
            cursor = page.get("next_cursor")
            if not cursor:
                return


class door_call(Generic[P, T]):
    """``name = door_call(calls.name)``: the call as a method of either door. On a
    :class:`SyncDoor` it returns the result; on an :class:`AsyncDoor` a coroutine of it
    (``perform`` is async there), so one listing of the calls serves both clients."""

    def __init__(self, make: Callable[P, Call[T]]) -> None:
        self._make = make

    @overload
    def __get__(self, door: None, owner: type) -> door_call[P, T]: ...
    @overload
    def __get__(self, door: AsyncDoor, owner: type) -> Callable[P, Coroutine[Any, Any, T]]: ...
    @overload
    def __get__(self, door: SyncDoor, owner: type) -> Callable[P, T]: ...
    def __get__(self, door: SyncDoor | AsyncDoor | None, owner: type) -> Any:
        if door is None:
            return self
        make, perform = self._make, door.perform

        @functools.wraps(make)
        def method(*args: P.args, **kwargs: P.kwargs) -> Any:
            return perform(make(*args, **kwargs))

        return method
