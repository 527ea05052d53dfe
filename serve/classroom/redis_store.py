"""The class store for several hosts: Redis, every write one Lua script."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

from serve.classroom.codes import new_code, new_key
from serve.classroom.store import (
    CODE_TRIES,
    SCHEMA_VERSION,
    ClassError,
    ClassState,
    ClassStore,
    Limits,
)

REDIS_PREFIX = f"normlab:classroom:v{SCHEMA_VERSION}:"
REDIS_TIMEOUT_S = 2.0

# KEYS: the live-classes index, the class. ARGV: now, lifetime (s), most classes, code, key.
CREATE_LUA = """
local now, lifetime = tonumber(ARGV[1]), tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - lifetime)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then return 'classes_full' end
if redis.call('EXISTS', KEYS[2]) == 1 then return 'taken' end
redis.call('HSET', KEYS[2], 'key', ARGV[5], 'created', ARGV[1], 'step', 1)
redis.call('EXPIREAT', KEYS[2], math.ceil(now + lifetime))
redis.call('ZADD', KEYS[1], now, ARGV[4])
return 'ok'
"""
# KEYS: the class, its reveals, its students, the step's answers.
# ARGV: student, step, option ('' to join only), most students.
ANSWER_LUA = """
local ends = redis.call('EXPIRETIME', KEYS[1])
if ends < 0 then return 'unknown' end
if ARGV[3] ~= '' and redis.call('SISMEMBER', KEYS[2], ARGV[2]) == 1 then return 'closed' end
if redis.call('SISMEMBER', KEYS[3], ARGV[1]) == 0 then
  if redis.call('SCARD', KEYS[3]) >= tonumber(ARGV[4]) then return 'students_full' end
  redis.call('SADD', KEYS[3], ARGV[1])
  redis.call('EXPIREAT', KEYS[3], ends)
end
if ARGV[3] ~= '' then
  redis.call('HSET', KEYS[4], ARGV[1], ARGV[3])
  redis.call('EXPIREAT', KEYS[4], ends)
end
return 'ok'
"""
# KEYS: the class, its reveals. ARGV: 'step' or 'reveal', the step.
TEACHER_LUA = """
local ends = redis.call('EXPIRETIME', KEYS[1])
if ends < 0 then return 'unknown' end
if ARGV[1] == 'step' then
  redis.call('HSET', KEYS[1], 'step', ARGV[2])
else
  redis.call('SADD', KEYS[2], ARGV[2])
  redis.call('EXPIREAT', KEYS[2], ends)
end
return 'ok'
"""


class RedisStore(ClassStore):
    """Redis (``redis://host:port/db``): a hash per class, sets of reveals and students and a
    hash of answers per step, each expiring with the class; every write is one Lua script."""

    def __init__(self, url: str, limits: Limits, **kwargs: object) -> None:
        super().__init__(limits, **kwargs)
        import redis

        self._errors = (redis.exceptions.RedisError, OSError)
        self.client = redis.Redis.from_url(
            url,
            socket_timeout=REDIS_TIMEOUT_S,
            socket_connect_timeout=REDIS_TIMEOUT_S,
            decode_responses=True,
        )
        self._create = self.client.register_script(CREATE_LUA)
        self._answer = self.client.register_script(ANSWER_LUA)
        self._teach = self.client.register_script(TEACHER_LUA)

    @staticmethod
    def key(code: str, *parts: object) -> str:
        return REDIS_PREFIX + ":".join(("class", code, *map(str, parts)))

    @contextmanager
    def _calls(self) -> Iterator[None]:
        try:
            yield
        except self._errors as err:
            raise ClassError("down", str(err)) from err

    @staticmethod
    def _outcome(result: str) -> None:
        if result != "ok":
            raise ClassError(result)

    def create(self) -> tuple[str, str]:
        key, index = new_key(), REDIS_PREFIX + "classes"
        args = [repr(self.clock()), repr(self.limits.lifetime_s), self.limits.classes]
        with self._calls():
            for _ in range(CODE_TRIES):
                code = new_code()
                result = self._create(keys=[index, self.key(code)], args=[*args, code, key])
                if result != "taken":
                    self._outcome(result)
                    return code, key
        raise ClassError("down", "no free code")

    def _hash(self, code: str) -> dict[str, str]:
        with self._calls():
            found = self.client.hgetall(self.key(code))
        if not found or self.expired(float(found["created"])):
            raise ClassError("unknown")
        return found

    def state(self, code: str) -> ClassState:
        code = self.check_code(code)
        found = self._hash(code)
        with self._calls():
            pipe = self.client.pipeline(transaction=True)
            pipe.smembers(self.key(code, "revealed"))
            pipe.scard(self.key(code, "students"))
            revealed, students = pipe.execute()
        steps = frozenset(int(s) for s in revealed)
        return ClassState(code, int(found["step"]), steps, students, float(found["created"]))

    def teacher_key(self, code: str) -> str:
        return self._hash(code)["key"]

    def _teacher_call(self, code: str, key: str, what: str, step: int) -> None:
        code, step = self.teacher(code, key), self.check_step(step)
        keys = [self.key(code), self.key(code, "revealed")]
        with self._calls():
            self._outcome(self._teach(keys=keys, args=[what, step]))

    def set_step(self, code: str, key: str, step: int) -> None:
        self._teacher_call(code, key, "step", step)

    def reveal(self, code: str, key: str, step: int) -> None:
        self._teacher_call(code, key, "reveal", step)

    def _student_call(self, code: str, student: str, step: int, option: str) -> None:
        keys = [
            self.key(code),
            self.key(code, "revealed"),
            self.key(code, "students"),
            self.key(code, "answers", step),
        ]
        with self._calls():
            result = self._answer(keys=keys, args=[student, step, option, self.limits.students])
        self._outcome(result)

    def join(self, code: str, student: str) -> int:
        code = self.check_code(code)
        self.check_student(student)
        self._hash(code)
        self._student_call(code, student, 0, "")
        return self.state(code).students

    def answer(self, code: str, student: str, step: int, option: str) -> None:
        code = self.check_code(code)
        self.check_answer(student, step, option)
        self._hash(code)
        self._student_call(code, student, step, option)

    def counts(self, code: str, step: int) -> dict[str, int]:
        code, step = self.check_code(code), self.check_step(step)
        self._hash(code)
        with self._calls():
            found = Counter(self.client.hvals(self.key(code, "answers", step)))
        return {option: found.get(option, 0) for option in self.lesson[step - 1]}
