"""NormLab for a whole class: N Streamlit workers on loopback ports behind HAProxy.

``python -m serve --workers N`` starts one ``streamlit run app.py`` per worker (default: one per
CPU) and HAProxy in front of them on ``--port``. HAProxy keeps each visitor on one worker with a
cookie (Streamlit's websocket, media and uploads live in that worker's memory), passes
websockets through, checks ``/_stcore/health`` every two seconds and sends a visitor whose worker
died to a live one; the launcher starts the dead worker again. Every control of the app lives in
the link, so a visitor who lands on another worker keeps the same view. While every worker's
seats are taken, a new visitor gets a "busy, retrying" page that reloads the same link."""
