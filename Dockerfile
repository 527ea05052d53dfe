# NormLab as a hosted demo for a whole class: one Streamlit worker per CPU behind HAProxy, CPU only,
# non-root, health-checked. Build and run:
#   docker build -t normlab . && docker run -p 8501:8501 normlab
# The same Python as the one the shipped training runs were made with: the training corpus is
# pydoc_data.topics, whose text (and so the corpus's sha256) changes between Python releases.
FROM python:3.11.7-slim

# haproxy sits in front of the workers (python -m serve); curl is only for the HEALTHCHECK.
RUN apt-get update \
    && apt-get install -y --no-install-recommends curl haproxy \
    && rm -rf /var/lib/apt/lists/*

# The class store (SQLite) lives in the user's home, which the user may write; several hosts
# share Redis instead: docker run -e NORMLAB_CLASS_STORE=redis://host:6379/0 (docs/serving.md).
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    NORMLAB_DATA_DIR=/home/normlab/.normlab

WORKDIR /app
COPY requirements.txt requirements-base.txt ./
# requirements.txt names PyTorch's CPU index: the default torch wheel pulls several GB of CUDA
# libraries.
RUN pip install --no-cache-dir -r requirements.txt

RUN useradd --create-home --uid 1000 normlab
COPY --chown=normlab:normlab . .
USER normlab

EXPOSE 8501
# Through HAProxy: healthy while at least one worker answers.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD curl --fail http://localhost:8501/_stcore/health || exit 1

# One worker per CPU the container may use (its CPU quota counts), HAProxy on port 8501.
CMD ["python", "-m", "serve", "--port=8501", "--address=0.0.0.0"]
