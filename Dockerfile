# NormLab as a hosted demo: CPU only, non-root, health-checked. Build and run:
#   docker build -t normlab . && docker run -p 8501:8501 normlab
FROM python:3.11-slim

# curl is only for the HEALTHCHECK below.
RUN apt-get update \
    && apt-get install -y --no-install-recommends curl \
    && rm -rf /var/lib/apt/lists/*

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1

WORKDIR /app
COPY requirements.txt .
# The CPU wheel index: the default torch wheel pulls several GB of CUDA libraries.
RUN pip install --no-cache-dir -r requirements.txt \
        --extra-index-url https://download.pytorch.org/whl/cpu

RUN useradd --create-home --uid 1000 normlab
COPY --chown=normlab:normlab . .
USER normlab

EXPOSE 8501
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD curl --fail http://localhost:8501/_stcore/health || exit 1

CMD ["streamlit", "run", "app.py", "--server.port=8501", "--server.address=0.0.0.0"]
