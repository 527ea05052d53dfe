"""The class store for several hosts: Redis, every write one Lua script."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import contextmanager

from serve.classroom.codes import new_code, new_key
from serve.classroom.store import (
    CODE_TRIES,
    CREATE_WINDOW_S,
    GUESS_WINDOW_S,
    SCHEMA_VERSION,
    ClassError,
    ClassState,
    ClassStore,
    Lesson,
    Limits,
    key_hash,
)

REDIS_PREFIX = f"normlab:classroom:v{SCHEMA_VERSION}:"
REDIS_TIMEOUT_S = 2.0

# KEYS: the live-classes index, the class, the client's creations this hour, the key's class.
# ARGV: now, lifetime (s), most classes, code, key hash, most per client, window (s).
CREATE_LUA = """
local now, lifetime = tonumber(ARGV[1]), tonumber(ARGV[2])
local made = redis.call('GET', KEYS[4])
if made then return 'made:' .. made end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - lifetime)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then return 'classes_full' end
if redis.call('EXISTS', KEYS[2]) == 1 then return 'taken' end
if redis.call('INCR', KEYS[3]) > tonumber(ARGV[6]) then return 'client_classes' end
redis.call('EXPIRE', KEYS[3], ARGV[7])
redis.call('HSET', KEYS[2], 'key', ARGV[5], 'created', ARGV[1], 'step', 1)
redis.call('EXPIREAT', KEYS[2], math.ceil(now + lifetime))
redis.call('ZADD', KEYS[1], now, ARGV[4])
redis.call('SET', KEYS[4], ARGV[4], 'EXAT', math.ceil(now + lifetime))
return 'ok'
"""
# KEYS: the class, its seats, the client's seats in it. ARGV: seat, most students, most per client.
JOIN_LUA = """
local ends = redis.call('EXPIRETIME', KEYS[1])
if ends < 0 then return 'unknown' end
local number = redis.call('HGET', KEYS[2], ARGV[1])
if number then return number end
if redis.call('HLEN', KEYS[2]) >= tonumber(ARGV[2]) then return 'students_full' end
if redis.call('INCR', KEYS[3]) > tonumber(ARGV[3]) then return 'client_seats' end
redis.call('EXPIREAT', KEYS[3], ends)
number = redis.call('HINCRBY', KEYS[1], 'seats', 1)
redis.call('HSET', KEYS[2], ARGV[1], number)
redis.call('EXPIREAT', KEYS[2], ends)
return tostring(number)
"""
# KEYS: the class, its phases, its seats, the step's answers (round 1), (round 2). ARGV: seat,
# step, option.
ANSWER_LUA = """
local ends = redis.call('EXPIRETIME', KEYS[1])
if ends < 0 then return 'unknown' end
if redis.call('HEXISTS', KEYS[3], ARGV[1]) == 0 then return 'bad_student' end
local phase = redis.call('HGET', KEYS[2], ARGV[2]) or 'vote'
local key, round = KEYS[4], '1'
if phase == 'vote2' then key, round = KEYS[5], '2' elseif phase ~= 'vote' then return 'closed' end
redis.call('HSET', key, ARGV[1], ARGV[3])
redis.call('EXPIREAT', key, ends)
return round
"""
# KEYS: the class, its phases, the step's answers (round 1), (round 2). ARGV: what, step, value.
TEACHER_LUA = """
local ends = redis.call('EXPIRETIME', KEYS[1])
if ends < 0 then return 'unknown' end
if ARGV[1] == 'step' then
  redis.call('HSET', KEYS[1], 'step', ARGV[2])
  return 'ok'
end
redis.call('HSET', KEYS[2], ARGV[2], ARGV[3])
redis.call('EXPIREAT', KEYS[2], ends)
if ARGV[3] == 'vote2' then
  local first = redis.call('HGETALL', KEYS[3])
  for i = 1, #first, 2 do redis.call('HSETNX', KEYS[4], first[i], first[i + 1]) end
  redis.call('EXPIREAT', KEYS[4], ends)
end
return 'ok'
"""


class RedisStore(ClassStore):
    """Redis (``redis://[:password@]host:port/db``): a hash per class, hashes of phases, seats
    and answers per step and round, each expiring with the class; each write one Lua script."""

    def __init__(self, url: str, limits: Limits, lesson: Lesson, **kwargs: object) -> None:
        super().__init__(limits, lesson, **kwargs)
        import redis

        self._errors = (redis.exceptions.RedisError, OSError)
        self.client = redis.Redis.from_url(
            url,
            socket_timeout=REDIS_TIMEOUT_S,
            socket_connect_timeout=REDIS_TIMEOUT_S,
            decode_responses=True,
        )
        self._create = self.client.register_script(CREATE_LUA)
        self._join = self.client.register_script(JOIN_LUA)
        self._answer = self.client.register_script(ANSWER_LUA)
        self._teach = self.client.register_script(TEACHER_LUA)
        self._salt: str | None = None

    @staticmethod
    def key(code: str, *parts: object) -> str:
        return REDIS_PREFIX + ":".join(("class", code, *map(str, parts)))

    @contextmanager
    def _calls(self) -> Iterator[None]:
        try:
            yield
        except self._errors as err:
            raise self.down(err) from err
        self.up()

    @staticmethod
    def _outcome(result: str) -> str:
        if result in ("ok", "taken") or result.isdigit():
            return result
        raise ClassError(result)

    def _limit_key(self, kind: str, client: str, *parts: object) -> str:
        if self._salt is None:
            with self._calls():
                self.client.set(REDIS_PREFIX + "salt", secrets.token_hex(16), nx=True)
                self._salt = self.client.get(REDIS_PREFIX + "salt")
        return REDIS_PREFIX + ":".join((kind, self.client_id(client, self._salt), *map(str, parts)))

    def create(self, client: str, key: str | None = None) -> tuple[str, str]:
        key, index = key or new_key(), REDIS_PREFIX + "classes"
        hits = self._limit_key("create", client, self.window(CREATE_WINDOW_S))
        limits = self.limits
        args = [repr(self.clock()), repr(limits.lifetime_s), limits.classes]
        with self._calls():
            for _ in range(CODE_TRIES):
                code = new_code()
                result = self._create(
                    keys=[index, self.key(code), hits, REDIS_PREFIX + "made:" + key_hash(key)],
                    args=[*args, code, key_hash(key), limits.client_classes, int(CREATE_WINDOW_S)],
                )
                if result.startswith("made:"):
                    return result[5:], key
                if self._outcome(result) == "ok":
                    return code, key
        raise ClassError("down", "no free code")

    def guess(self, client: str) -> None:
        hits = self._limit_key("guess", client, self.window(GUESS_WINDOW_S))
        with self._calls():
            count = self.client.incr(hits)
            self.client.expire(hits, int(GUESS_WINDOW_S))
        if count > self.limits.client_guesses:
            raise ClassError("client_guesses")

    def guessed_too_often(self, client: str) -> bool:
        hits = self._limit_key("guess", client, self.window(GUESS_WINDOW_S))
        with self._calls():
            count = int(self.client.get(hits) or 0)
        return count >= self.limits.client_guesses

    def _hash(self, code: str) -> dict[str, str]:
        with self._calls():
            found = self.client.hgetall(self.key(code))
        if not found or self.expired(float(found["created"])):
            with self._calls():
                ended = self.client.exists(REDIS_PREFIX + "ended:" + code)
            raise ClassError("ended" if ended else "unknown")
        return found

    def state(self, code: str) -> ClassState:
        code = self.check_code(code)
        found = self._hash(code)
        with self._calls():
            pipe = self.client.pipeline(transaction=True)
            pipe.hgetall(self.key(code, "phases"))
            pipe.hlen(self.key(code, "seats"))
            phases, students = pipe.execute()
        phases = {int(s): p for s, p in phases.items()}
        return ClassState(code, int(found["step"]), phases, students, float(found["created"]))

    def key_hash(self, code: str) -> str:
        return self._hash(code)["key"]

    def _teacher_call(self, code: str, key: str, step: int, what: str, value: str = "") -> None:
        code, step = self.teacher(code, key), self.check_step(step)
        keys = [self.key(code), self.key(code, "phases")]
        keys += [self.key(code, "answers", step, r) for r in (1, 2)]
        with self._calls():
            self._outcome(self._teach(keys=keys, args=[what, step, value]))

    def set_step(self, code: str, key: str, step: int) -> None:
        self._teacher_call(code, key, step, "step")

    def set_phase(self, code: str, key: str, step: int, phase: str) -> None:
        phase = self.next_phase(self.state(self.check_code(code)), self.check_step(step), phase)
        self._teacher_call(code, key, step, "phase", phase)

    def end(self, code: str, key: str) -> None:
        code = self.teacher(code, key)
        with self._calls():
            found = list(self.client.scan_iter(self.key(code) + "*", count=500))
            self.client.delete(*found, REDIS_PREFIX + "made:" + key_hash(key))
            self.client.zrem(REDIS_PREFIX + "classes", code)
            self.client.set(REDIS_PREFIX + "ended:" + code, 1, ex=int(self.limits.lifetime_s))

    def join(self, code: str, seat: str, client: str) -> int:
        code, seat = self.check_code(code), self.check_seat(seat)
        self._hash(code)
        keys = [self.key(code), self.key(code, "seats"), self._limit_key(f"seat:{code}", client)]
        with self._calls():
            args = [seat, self.limits.students, self.limits.client_seats]
            result = self._join(keys=keys, args=args)
        return int(self._outcome(result))

    def answer(self, code: str, seat: str, step: int, option: str) -> int:
        code = self.check_code(code)
        self.check_answer(seat, step, option)
        self._hash(code)
        keys = [self.key(code), self.key(code, "phases"), self.key(code, "seats")]
        keys += [self.key(code, "answers", step, r) for r in (1, 2)]
        with self._calls():
            result = self._answer(keys=keys, args=[seat, step, option])
        return int(self._outcome(result))

    def has_seat(self, code: str, seat: str) -> bool:
        with self._calls():
            return bool(self.client.hexists(self.key(self.check_code(code), "seats"), seat))

    def answers(self, code: str, seat: str) -> dict[tuple[int, int], str]:
        code = self.check_code(code)
        with self._calls():
            pipe = self.client.pipeline(transaction=False)
            places = [(s, r) for s in range(1, len(self.lesson) + 1) for r in (1, 2)]
            for step, round in places:
                pipe.hget(self.key(code, "answers", step, round), seat)
            found = pipe.execute()
        return {place: option for place, option in zip(places, found, strict=True) if option}

    def rounds(self, code: str, step: int) -> dict[int, tuple[str | None, str | None]]:
        code, step = self.check_code(code), self.check_step(step)
        self._hash(code)
        with self._calls():
            pipe = self.client.pipeline(transaction=True)
            pipe.hgetall(self.key(code, "seats"))
            for round in (1, 2):
                pipe.hgetall(self.key(code, "answers", step, round))
            seats, first, second = pipe.execute()
        found = {
            int(seats[s]): (first.get(s), second.get(s)) for s in {*first, *second} if s in seats
        }
        return dict(sorted(found.items()))
