"""advisor.engine"""
