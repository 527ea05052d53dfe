"""A class answering one lesson together: the store of classes, students' answers and reveals.

``store.py`` holds the one interface (:class:`store.ClassStore`) and its two backends, SQLite on
one host and Redis for several; ``codes.py`` makes a class's join code and the teacher's key.
The pages reach the store only through :func:`backends.open_store`.
"""
