"""The backward lab: both norms' Jacobians, and the gradient each passes back."""
