"""NormLab for a whole class: N Streamlit workers on loopback ports behind HAProxy.

``python -m serve --workers N`` starts one ``streamlit run app.py`` per worker (default: one per
CPU) and HAProxy in front of them on ``--port``. docs/serving.md, "One host, many workers", says
how visitors stay on a worker, what happens when one dies and what a full class sees."""
