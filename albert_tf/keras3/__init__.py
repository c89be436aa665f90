"""Keras 3 (`import keras`) code: loading our exports and keras-hub presets.

Everything else in albert_tf is Keras 2 (`tf_keras`); the two Keras
libraries are kept in separate modules and no tf_keras module imports these.
"""
