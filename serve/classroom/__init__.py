"""A class answering one lesson together: the store of classes, seats, answers and phases.

``store.py`` holds the one interface (:class:`store.ClassStore`); its backends are
``sqlite_store.py`` (one host) and ``redis_store.py`` (several); ``codes.py`` makes a class's join
code and the teacher's key. The pages reach the store only through :func:`backends.open_store`."""
