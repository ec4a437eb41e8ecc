"""The app server's parts that hold no maths and never import streamlit: process start-up and health checks, the
bounded Monte-Carlo job pool shared by a server's sessions, and what the processes of one classroom share."""
